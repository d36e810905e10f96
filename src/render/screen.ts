// The one object that owns the terminal while `watch` runs: the alternate
// screen, the hidden cursor, raw keys, and frames drawn by rewriting only the
// lines that changed. Everything it changes, restore() puts back.
import { writeSync } from "node:fs";
import { displayWidth } from "./style.ts";

export interface TerminalOut {
  fd: number;
  columns?: number;
  rows?: number;
}

export interface TerminalIn {
  isTTY?: boolean;
  setRawMode?(raw: boolean): unknown;
  on(event: "data", listener: (data: Buffer) => void): unknown;
  off(event: "data", listener: (data: Buffer) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

const ENTER = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
const LEAVE = "\x1b[0m\x1b[?25h\x1b[?1049l";
const CTRL_C = 0x03;
const CTRL_D = 0x04;

export class Screen {
  private previous: string[] | undefined;
  private entered = false;
  private raw = false;
  private keyListener: ((data: Buffer) => void) | undefined;

  constructor(
    private readonly out: TerminalOut,
    private readonly input?: TerminalIn,
  ) {}

  get columns(): number {
    return this.out.columns || 80;
  }

  get rows(): number {
    return this.out.rows || 24;
  }

  /**
   * Take the terminal. Keys are read raw, so typing does not scribble over the
   * frame; Ctrl-C, Ctrl-D and q call `onQuit` (SIGINT is handled by the caller too).
   */
  enter(onQuit: () => void): void {
    if (this.entered) return;
    this.entered = true;
    this.write(ENTER);
    if (this.input?.isTTY && this.input.setRawMode) {
      this.input.setRawMode(true);
      this.raw = true;
      this.keyListener = (data) => {
        if (data.includes(CTRL_C) || data.includes(CTRL_D) || data.includes(0x71 /* q */)) onQuit();
      };
      this.input.on("data", this.keyListener);
      this.input.resume();
    }
  }

  /** Draw a frame, sending only the lines that differ from the last one. */
  draw(lines: string[]): void {
    if (!this.entered) return;
    const previous = this.previous;
    let text = previous === undefined ? "\x1b[H\x1b[2J" : "";
    lines.forEach((line, i) => {
      if (previous?.[i] === line) return;
      // Erasing after a full-width line would erase its last character (pending wrap).
      text += `\x1b[${i + 1};1H${line}${displayWidth(line) < this.columns ? "\x1b[K" : ""}`;
    });
    if (previous !== undefined && lines.length < previous.length) text += `\x1b[${lines.length + 1};1H\x1b[J`;
    this.previous = lines;
    if (text !== "") this.write(text);
  }

  /** Forget what is on screen (after a resize): the next frame is drawn whole. */
  invalidate(): void {
    this.previous = undefined;
  }

  /** Give the terminal back as it was. Safe to call more than once. */
  restore(): void {
    if (this.keyListener && this.input) {
      this.input.off("data", this.keyListener);
      this.input.pause();
      this.keyListener = undefined;
    }
    if (this.raw) {
      this.raw = false;
      try {
        this.input?.setRawMode?.(false);
      } catch {
        // The terminal may already be gone (SIGHUP).
      }
    }
    if (!this.entered) return;
    this.entered = false;
    this.write(LEAVE);
  }

  // Synchronous, so the last frame and the restore reach the terminal before the process exits.
  private write(text: string): void {
    try {
      const bytes = Buffer.from(text);
      for (let done = 0; done < bytes.length; ) done += writeSync(this.out.fd, bytes, done);
    } catch {
      // A terminal that went away cannot be drawn on or restored.
    }
  }
}
