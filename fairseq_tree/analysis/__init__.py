"""Analyses of trained models: where tree2seq attends (``attention``), shown as tables and
pictures."""
