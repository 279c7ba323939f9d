"""How tuneplan reaches a host: the Transport protocol, the local machine, and OpenSSH-compatible
SSH."""
