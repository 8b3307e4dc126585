"""Command packets as the emulated driver reads them, turned into a submission of the
driver and firmware model (`harness.sim.stack.Stack.submit`), and the model's verdict
written back into them.

What is read, as amd/xdna-driver `amdxdna_ctx.c` (`amdxdna_cmd_get_payload`,
`amdxdna_cmd_get_cu_idx`) and `aie2_message.c` (`aie2_cmdlist_fill_*`) read it: an ERT
packet's header (state, extra CU masks, payload word count, opcode; XRT `ert.h`); an
ERT_CMD_CHAIN's payload {command_count, submit_index, error_index, reserved[3], u64
data[]} whose data are the sub-commands' BO handles; a sub-command's payload after its CU
masks, whose size in bytes is what the slot carries (ERT_START_CU), less the 16-byte
{instruction buffer, size, property count} head for ERT_START_NPU, less the 40-byte
preemption head for the preemption opcodes.

What the firmware model checks is what the simulated binding's firmware checks, read
from device memory instead of the binding's objects: the TXN stream an ERT_START_CU's
instruction argument points to (a DPU kernel's register map: the opcode u64 at byte 0,
the instruction buffer's address u64 at byte 8, its length in words u32 at byte 16; both
zero means no instructions at all), or the stream an NPU command's instruction buffer
holds. An address that is no buffer of the file's (the 0xFF a failed command's payload
was filled with, say) is refused as the binding refuses a non-buffer argument.

What is written back, as `amdxdna_cmd_set_state` and `amdxdna_cmd_set_error` write it:
the submitted packet's state, a chain's error_index when it failed, and over a failed
command's payload (a chain's sub-command 0, or the one the build names) 0xFF to the end
of the object and then the error data (`Overwrite` of the model).

XRT never re-encodes a payload, so a command submitted again still holds what the driver
wrote over it until the program sets those arguments again. The firmware model refuses
such a command as the simulated binding's does: while any payload word still holds what
the driver wrote there (and XRT had written something else), the command is garbage.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.emulator import uapi
from harness.emulator.memory import BufferObject, DriverError, Handles
from harness.formats.txn import TxnError, carries_work, check_stream
from harness.model.firmware import NOT_MODELLED_WORD
from harness.sim.stack import Job

NPU_HEAD = uapi.NPU_DATA.size            # amdxdna_cmd_start_npu
PREEMPT_HEAD = uapi.PREEMPT_DATA.size    # amdxdna_cmd_preempt_data
NO_INSTRUCTIONS = "argument 1 is not an instruction buffer"


@dataclass
class Packet:
    buffer: BufferObject
    state: int
    opcode: int
    payload: bytes           # after the header and, but for a chain, the CU masks
    cu_index: int | None


def read_packet(buffer: BufferObject) -> Packet:
    header = buffer.word(0)
    state, extra_masks, count, opcode = uapi.header_fields(header)
    masks = 0 if opcode == uapi.ERT_CMD_CHAIN else 1 + extra_masks
    if count <= masks or 4 + count * 4 > buffer.size:
        raise DriverError(errno.EINVAL, f"command BO {buffer.id}: payload of {count} words")
    words = buffer.read(4, count * 4)
    cu_index = None
    for position in range(masks):
        mask = int.from_bytes(words[position * 4:position * 4 + 4], "little")
        if mask:
            cu_index = (mask & -mask).bit_length() - 1
            break
    return Packet(buffer, state, opcode, words[masks * 4:], cu_index)


def chain_members(packet: Packet, handles: Handles) -> list[BufferObject]:
    """The sub-command BOs an ERT_CMD_CHAIN names, in order."""
    payload = packet.payload
    if len(payload) < uapi.CHAIN_HEAD.size:
        raise DriverError(errno.EINVAL, "chain payload shorter than its head")
    count = uapi.CHAIN_HEAD.unpack_from(payload)[0]
    if count == 0 or len(payload) < uapi.CHAIN_HEAD.size + 8 * count:
        raise DriverError(errno.EINVAL, f"chain of {count} commands")
    members = []
    for index in range(count):
        at = uapi.CHAIN_HEAD.size + 8 * index
        handle = int.from_bytes(payload[at:at + 8], "little") & 0xFFFFFFFF
        member = handles.table.get(handle)
        if member is None or member.kind not in (uapi.BO_CMD, uapi.BO_SHARE):
            raise DriverError(errno.EINVAL, f"chain member {handle} is not a command BO")
        members.append(member)
    return members


def argument_bytes(packet: Packet) -> int:
    """The bytes of arguments the driver packs into the command's chain slot."""
    head = {uapi.ERT_START_NPU: NPU_HEAD, uapi.ERT_START_NPU_PREEMPT: PREEMPT_HEAD,
            uapi.ERT_START_NPU_PREEMPT_ELF: PREEMPT_HEAD}.get(packet.opcode, 0)
    return max(0, len(packet.payload) - head)


def stale_fault(buffer: BufferObject) -> str | None:
    """A payload that still holds what the driver wrote over it after a failure."""
    wrote = buffer.driver_wrote
    if not wrote:
        return None
    stale = {i: after for i, (before, after) in wrote.items()
             if before != after and buffer.word(1 + i) == after}
    if not stale:
        buffer.driver_wrote = None          # every overwritten word has been set again
        return None
    return (f"the payload still holds what the driver wrote after an earlier failure (word 1 "
            f"= 0x{buffer.word(2):08X}; XRT never re-encodes a payload): the firmware model "
            "refuses the garbage")


def instruction_stream(packet: Packet, handles: Handles) -> tuple[bytes, int | None] | str \
        | None:
    """The instructions this command names, as the device reads them: the stream and the
    ninstr its register map gives (None for an NPU command's), None for a command with no
    instructions to check, or why argument 1 is no instruction buffer."""
    payload = packet.payload
    if packet.opcode == uapi.ERT_START_CU:
        if len(payload) < 20:
            return None                      # not a DPU register map: nothing to check
        address = int.from_bytes(payload[8:16], "little")
        words = int.from_bytes(payload[16:20], "little")
        if address == 0 and words == 0:
            return None
        found = handles.at(address)
        if found is None:
            return NO_INSTRUCTIONS
        buffer, offset = found
        return buffer.read(offset, buffer.size - offset), words
    if packet.opcode in (uapi.ERT_START_NPU, uapi.ERT_START_NPU_PREEMPT,
                         uapi.ERT_START_NPU_PREEMPT_ELF):
        head = uapi.NPU_DATA if packet.opcode == uapi.ERT_START_NPU else uapi.PREEMPT_DATA
        if len(payload) < head.size:
            return NO_INSTRUCTIONS
        fields = head.unpack_from(payload)
        address = fields[0]
        size = fields[1] if packet.opcode == uapi.ERT_START_NPU else fields[3]
        found = handles.at(address)
        if found is None:
            return NO_INSTRUCTIONS
        buffer, offset = found
        return buffer.read(offset, size), None
    return None


def instruction_fault(packet: Packet, handles: Handles, columns: int, dev_gen: int
                      ) -> str | None:
    """What the firmware model refuses in the instructions this command names."""
    stale = stale_fault(packet.buffer)
    if stale is not None:
        return stale
    named = instruction_stream(packet, handles)
    if not isinstance(named, tuple):
        return named
    stream, ninstr = named
    try:
        check_stream(stream, columns=columns, dev_gen=dev_gen, ninstr_words=ninstr)
    except TxnError as err:
        return f"invalid instruction stream: {err}"
    return None


def instruction_work(packet: Packet, handles: Handles) -> bool:
    """Whether the command's instructions carry work (anything but NOOPs): what the
    simulated binding's firmware counts for `work-hang:N`."""
    named = instruction_stream(packet, handles)
    return isinstance(named, tuple) and carries_work(named[0])


@dataclass
class Submission:
    """One EXEC_CMD: the packet submitted and the commands the firmware runs."""

    command: BufferObject
    members: list[BufferObject]          # a chain's sub-commands, or the command itself
    chained: bool
    opcodes: list[int]
    arg_bytes: list[int]
    faults: dict[int, str]
    handles: Handles | None = field(default=None, repr=False)
    works: list[bool] = field(default_factory=list)   # per command: its code is not NOOPs
    cus: list[int | None] = field(default_factory=list)   # per command: the CU its mask picks
    seq: int | None = None
    job: Job | None = field(default=None, repr=False)
    written: bool = False
    # drops the references the job holds on its buffers, once it has ended
    release: Callable[[], None] | None = field(default=None, repr=False)


def read_submission(command: BufferObject, handles: Handles, columns: int, dev_gen: int
                    ) -> Submission:
    packet = read_packet(command)
    chained = packet.opcode == uapi.ERT_CMD_CHAIN
    members = chain_members(packet, handles) if chained else [command]
    packets = [read_packet(member) for member in members] if chained else [packet]
    faults = {}
    for index, member in enumerate(packets):
        fault = instruction_fault(member, handles, columns, dev_gen)
        if fault is not None:
            faults[index] = fault
    return Submission(command, members, chained, [p.opcode for p in packets],
                      [argument_bytes(p) for p in packets], faults, handles,
                      [instruction_work(p, handles) for p in packets],
                      cus=[p.cu_index for p in packets])


def write_back(submission: Submission) -> None:
    """What the driver leaves in the packets once the model has ended the job."""
    job = submission.job
    if job is None:                      # never given to the model: nothing was written
        return
    command = submission.command
    command.set_word(0, uapi.with_state(command.word(0), job.state))
    if submission.chained and job.index_written:
        # error_index: the chain payload's third word, after the packet header
        command.set_word(3, job.error_index)
    for index, over in job.overwrites.items():
        target = submission.members[index] if index < len(submission.members) else None
        if target is None or (submission.chained and not _has_handle(submission, target)):
            # amdxdna_cmd_set_error looks a chain's sub-command up by its handle when the
            # job ends: one the program closed meanwhile is not found (-EINVAL there), and
            # nothing is written into it
            continue
        words = (target.size - 4) // 4
        before = [target.word(1 + i) for i in range(words)]
        if over.fill is not None:
            target.fill(4, over.fill & 0xFF)
        for position, word in enumerate(over.words):
            target.set_word(1 + position, NOT_MODELLED_WORD if word is None else word)
        target.driver_wrote = {i: (before[i], target.word(1 + i)) for i in range(words)
                               if before[i] != target.word(1 + i)}
    submission.written = True
    if submission.release is not None:
        submission.release()
        submission.release = None


def _has_handle(submission: Submission, buffer: BufferObject) -> bool:
    handles = submission.handles
    return handles is not None and any(held is buffer for held in handles.table.values())
