"""The kernel log: reading it around a trial (`kernel_log`), and what the amdxdna
driver's lines in it say (`driver_lines`)."""
