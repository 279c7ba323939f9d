"""How long a step takes: FLOPs, kernel rates, fitted efficiencies, communication, the step and its
band."""
