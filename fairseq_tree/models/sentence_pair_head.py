"""The sentence-pair head of Tai et al. (2015), "Improved Semantic Representations From
Tree-Structured Long Short-Term Memory Networks", Section 4.2, which Ahmed et al. (2019) use for
SICK and MSRP: the two sentence vectors are compared by their element-wise product and absolute
difference, then a sigmoid hidden layer and a softmax output layer."""

import torch
from torch import Tensor, nn


def pair_features(left: Tensor, right: Tensor) -> Tensor:
    """Tai et al. 2015, Section 4.2: [h_x; h_+] with h_x = h_L * h_R (element-wise) and
    h_+ = |h_L - h_R|; B x C, B x C -> B x 2C."""
    return torch.cat([left * right, (left - right).abs()], dim=-1)


class SentencePairClassificationHead(nn.Module):
    """Tai et al. 2015, Section 4.2: h_s = sigmoid(W_x h_x + W_+ h_+ + b_h) (one linear map over
    [h_x; h_+]), then logits W_p h_s + b_p (the softmax is the criterion's). Dropout, as
    fairseq's classification heads apply it, before each linear map."""

    def __init__(self, input_dim: int, inner_dim: int, num_classes: int, pooler_dropout: float):
        super().__init__()
        self.hidden = nn.Linear(2 * input_dim, inner_dim)
        self.dropout = nn.Dropout(p=pooler_dropout)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        """features: B x 2 x C, the left and right sentence vectors -> B x classes."""
        x = self.dropout(pair_features(features[:, 0], features[:, 1]))
        x = torch.sigmoid(self.hidden(x))
        return self.out_proj(self.dropout(x))
