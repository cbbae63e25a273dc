"""Package data: the demo study and its ESConv-format corpus (written for heart-bench)."""
