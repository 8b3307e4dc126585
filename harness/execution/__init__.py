"""Running trials: which pyxrt answers (`backend`), one trial through the pyxrt API
(`session`), workers with a hard deadline (`isolation`, `worker`), the runner that
records each trial in its report, and continuing a stopped report (`resume`)."""
