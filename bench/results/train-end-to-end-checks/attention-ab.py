"""tree2seq's encoder self-attention (layer 0 of the quickstart model, forward and backward) on
12 real batches, against fairseq's MultiheadAttention on the same leaves + nodes, and the
decoder's tree cross-attention against fairseq's encoder-decoder attention over the same
[leaves; nodes] memory; also the fused projection against three separate ones. Run from the
repository root, nothing else running; ms per batch, the best of 3 passes."""
import json, shlex, sys, time
sys.path.insert(0, 'bench')
import torch, torch.nn.functional as F
import training as tr
from fairseq_tree.modules.heads import MultiheadProjections
torch.manual_seed(0)
cmds = json.load(open('bench/results/train-end-to-end-cpu.json'))['commands']
setup = tr.build_setup('tree2seq', shlex.split(cmds['tree2seq'])[1:])
ids = tr.chosen_batches(setup, 12)
model = setup.trainer.model
enc_attn = model.encoder.layers[0].self_attn
dec_attn = model.decoder.layers[0].encoder_attn
captured = []
def hook(mod, args, kwargs, out):
    captured.append((kwargs.get('query', args[0] if args else None), kwargs.get('key_padding_mask')))
h = enc_attn.register_forward_hook(hook, with_kwargs=True)
cap_dec = []
def hook2(mod, args, kwargs, out):
    cap_dec.append((kwargs['query'], kwargs['key']))
h2 = dec_attn.register_forward_hook(hook2, with_kwargs=True)
model.train()
for i in ids:
    b = tr.collate(setup, i)
    with torch.no_grad():
        model(**b['net_input'])
h.remove(); h2.remove()
print('captured', len(captured), [tuple(q.shape) for q, _ in captured[:3]])
inputs = [(q.detach().clone(), t) for q, t in captured]

def project_separate(self, x, *projections):
    return tuple(F.linear(x, p.weight, p.bias) for p in projections)
orig_project = MultiheadProjections.project

def time_variant(mod, inputs, reps=3):
    ts = []
    for r in range(reps):
        t0 = time.perf_counter()
        for q, tree in inputs:
            q = q.requires_grad_(True)
            out, _ = mod(query=q, key=q, value=q, key_padding_mask=tree)
            out.sum().backward()
        ts.append(time.perf_counter() - t0)
    return min(ts) / len(inputs) * 1000
variants = {'current': orig_project, 'separate': project_separate}
for rnd in range(3):
    for name, fn in variants.items():
        MultiheadProjections.project = fn
        print(rnd, name, f"{time_variant(enc_attn, inputs):.2f} ms")
MultiheadProjections.project = orig_project
# fairseq MHA on the same (N+M) tokens with key padding (no tree): the plain comparator
from fairseq.modules import MultiheadAttention
mha = MultiheadAttention(256, 4, dropout=0.2, self_attention=True)
mha.train()
def time_mha(reps=3):
    ts = []
    for r in range(reps):
        t0 = time.perf_counter()
        for q, tree in inputs:
            q = q.requires_grad_(True)
            kpm = torch.cat([tree.leaf_padding_mask, tree.node_padding_mask], 1)
            out, _ = mha(query=q, key=q, value=q, key_padding_mask=kpm, need_weights=False)
            out.sum().backward()
        ts.append(time.perf_counter() - t0)
    return min(ts) / len(inputs) * 1000
for rnd in range(2):
    print('fairseq MHA on N+M tokens', f"{time_mha():.2f} ms")

# decoder: tree cross-attention against fairseq's encoder-decoder attention, same memory
xmha = MultiheadAttention(256, 4, dropout=0.2, encoder_decoder_attention=True)
xmha.train()
dec_inputs = [(q.detach().clone(), t) for q, t in cap_dec]
def time_cross(use_mha, reps=3):
    ts = []
    for r in range(reps):
        t0 = time.perf_counter()
        for q, tree in dec_inputs:
            q = q.requires_grad_(True)
            if use_mha:
                out, _ = xmha(query=q, key=tree.states, value=tree.states,
                              key_padding_mask=tree.memory_padding_mask(), static_kv=True,
                              need_weights=False)
            else:
                out, _ = dec_attn(query=q, key=tree, value=tree)
            out.sum().backward()
        ts.append(time.perf_counter() - t0)
    return min(ts) / len(dec_inputs) * 1000
for rnd in range(2):
    print('tree cross-attention', f"{time_cross(False):.2f} ms")
    print('fairseq encoder-decoder attention over N+M', f"{time_cross(True):.2f} ms")
