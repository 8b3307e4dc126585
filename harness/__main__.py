from harness.cli import main

main(prog_name="runlist-harness")
