"""Reproducing through a running `flm serve`: a bounded HTTP client (`client`),
FastFlowLM's model folders (`modelpack`), and the requests and their checks
(`reproduce`)."""
