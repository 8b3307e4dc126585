"""A stand-in for FastFlowLM's command line (`flm run MODEL`), for tests: a program written
for the real pyxrt that submits as FastFlowLM's engine does, so that `capture record`,
`reproduce_ert_timeout --capture` and `report bundle` can be tested end to end without it.

Usage: python standin_engine.py PACK [--layers N] [--max-tokens N]

What it does, as STACK.md 1 and 3 describe FastFlowLM's engine (closed; these are readings
of its disassembly and of its public `npu_utils.hpp`):
- one hardware context per xclbin of PACK (attn, mm, layer, dequant), kernels opened from
  a control-code ELF (`elf` -> `module` -> `ext.kernel`) and called `(3, 0, 0, bo...)`;
- per prompt line on standard input: a prefill frame (one run in the attn context), then
  per token one runlist of N layer runs (42 by default) in the layer context, executed
  and waited on, then a run in mm and one in dequant; the activations are rewritten and
  synced to the device before each token;
- a failed runlist prints FastFlowLM's error line, `{"error":"runlist failed execution
  (ERT_CMD_STATE_TIMEOUT)"}` (the line ROCm/FastFlowLM#712 shows), and ends the answer;
- `/bye` (FastFlowLM's documented way to leave its CLI, docs/instructions/cli.md) or the
  end of input ends it through a normal exit, every XRT object kept alive until then (XRT's
  capture keys its records by address).

PACK holds `ROLE.xclbin` and, since this stand-in has no ELF builder, `ROLE.elf`: the
control code each role's kernel runs (FastFlowLM assembles its own with aiebu).
"""

import argparse
import json
import sys
from pathlib import Path

import pyxrt

ROLES = ("attn", "mm", "layer", "dequant")
KERNEL = "MLIR_AIE"
TO_DEVICE = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
COMPLETED = pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
SIZE = 4096


def error_line(message: str) -> str:
    return json.dumps({"error": message.splitlines()[0]}, separators=(",", ":"))


class Engine:
    def __init__(self, pack: Path, layers: int) -> None:
        self.layers = layers
        self.device = pyxrt.device(0)
        self.contexts, self.kernels, self.weights = {}, {}, {}
        self.kept = []                      # every run and runlist, alive until exit
        for role in ROLES:
            xclbin = pyxrt.xclbin(str(pack / f"{role}.xclbin"))
            self.device.register_xclbin(xclbin)
            context = pyxrt.hw_context(self.device, xclbin.get_uuid())
            module = pyxrt.module(pyxrt.elf(str(pack / f"{role}.elf")))
            self.contexts[role] = context
            self.kernels[role] = pyxrt.ext.kernel(context, module, KERNEL)
            self.weights[role] = self.buffer(role, bytes([ROLES.index(role) + 1]) * SIZE)
        self.activations = self.buffer("layer", bytes(SIZE))
        self.cache = self.buffer("layer", bytes(SIZE))
        self.logits = self.buffer("mm", bytes(SIZE))
        self.scratch = self.buffer("layer", bytes(SIZE))

    def buffer(self, role: str, content: bytes):
        bo = pyxrt.bo(self.device, len(content), pyxrt.bo.host_only,
                      self.kernels[role].group_id(3) if role in self.kernels else 0)
        bo.write(content, 0)
        bo.sync(TO_DEVICE)
        return bo

    def arguments(self, role: str) -> list:
        return [3, 0, 0, self.weights[role], self.activations, self.cache, self.logits,
                self.scratch]

    def single(self, role: str) -> bool:
        run = self.kernels[role](*self.arguments(role))
        self.kept.append(run)
        state = run.wait()
        if state != COMPLETED:
            print(error_line(f"run failed execution ({state.name})"), flush=True)
            return False
        return True

    def token(self, number: int) -> bool:
        self.activations.write(number.to_bytes(4, "little") * (SIZE // 4), 0)
        self.activations.sync(TO_DEVICE)
        runlist = pyxrt.runlist(self.contexts["layer"])
        self.kept.append(runlist)
        for _ in range(self.layers):
            run = pyxrt.run(self.kernels["layer"])
            for index, value in enumerate(self.arguments("layer")):
                run.set_arg(index, value)
            runlist.add(run)
            self.kept.append(run)
        runlist.execute()
        try:
            runlist.wait()
        except RuntimeError as err:
            print(error_line(str(err)), flush=True)
            return False
        return self.single("mm") and self.single("dequant")

    def answer(self, prompt: str, max_tokens: int) -> None:
        self.activations.write(prompt.encode()[:SIZE].ljust(SIZE, b"\0"), 0)
        self.activations.sync(TO_DEVICE)
        if not self.single("attn"):
            return
        for number in range(max_tokens):
            if not self.token(number):
                return
            print(f"token {number + 1}", flush=True)
        print("done", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pack", type=Path)
    parser.add_argument("--layers", type=int, default=42)
    parser.add_argument("--max-tokens", type=int, default=4)
    args = parser.parse_args()
    engine = Engine(args.pack, args.layers)
    for line in sys.stdin:
        prompt = line.strip()
        if prompt == "/bye":
            break
        if prompt:
            engine.answer(prompt, args.max_tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
