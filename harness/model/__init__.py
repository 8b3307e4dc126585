"""The harness's vocabulary, with no I/O: errors a user can cause, XRT's command states,
plans, the amdxdna driver flavours, and what a trial is asked and answers."""
