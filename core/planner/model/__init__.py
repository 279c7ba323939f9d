"""The model and what each GPU holds: parameters, attention layers, LoRA, memory, savers, parallel
layouts."""
