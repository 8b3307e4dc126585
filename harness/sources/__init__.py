"""Where a runlist's runs come from, each source one reader that makes the same `Case`:
case files (`case`), XRT run recipes (`recipe`), XRT captures (`capture`); `load` is the
one dispatcher above them. Also the model packs whose xclbins a case names (`packs`),
full-ELF programs, and the depth-only control."""
