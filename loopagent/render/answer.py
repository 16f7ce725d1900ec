"""One turn's answer for the colour screen: streamed Markdown cut into blocks, held back while it may
still be commentary (text that comes with tool calls is shown dim and indented, not as the answer)."""

from __future__ import annotations

from loopagent.render.markdown import Block, BlockSplitter

# Text up to this size is held back until the turn ends: if tool calls come with it, it is commentary.
HOLD_CHARS = 1500


class Answer:
    """Streamed text in, blocks to print out. Work per delta is proportional to the delta."""

    def __init__(self) -> None:
        self.splitter = BlockSplitter()
        self.held: list[Block] = []
        self.held_chars = 0
        self.committed = False  # blocks of this turn were printed as the answer

    def feed(self, text: str) -> list[Block]:
        """The blocks `text` finishes that can be printed now (as the answer)."""
        out: list[Block] = []
        for block in self.splitter.feed(text):
            if self.committed:
                out.append(block)
                continue
            self.held.append(block)
            self.held_chars += len(block.text)
            if self.held_chars > HOLD_CHARS:  # too long for commentary: this is the answer
                self.committed = True
                out += self.held
                self.held, self.held_chars = [], 0
        return out

    def finish(self, with_calls: bool) -> tuple[list[Block], bool]:
        """Everything not yet printed, and whether it is commentary (it came with tool calls)."""
        blocks = [*self.held, *self.splitter.finish()]
        self.held, self.held_chars = [], 0
        return blocks, with_calls and not self.committed

    def pending(self) -> list[Block]:
        """What the live area shows: held blocks and the open one."""
        open_block = self.splitter.open_block()
        return [*self.held, *([open_block] if open_block is not None else [])]
