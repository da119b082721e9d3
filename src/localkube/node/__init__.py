"""The node agent: binds pods and moves them through their lifecycle, simulated or as local processes."""
