"""The files the harness reads and writes, one module a format: xclbin, control-code
ELF, TXN instruction streams, `ar` archives, XRT's JSON documents and YAML; writers
where tests and exports need them, views for `inspect`, and the cache folder."""
