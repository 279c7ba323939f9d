"""The Plan place: a wizard from model to summary over one shared, validated request."""
