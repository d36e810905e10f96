// The per-server queue of mutating calls (R-PROXY-6): calls run in the order
// they arrived; a call that pauses (its client is answering a server's
// request for input, R-ERA-3) lets the next ones run, and queues again behind
// them.
import { describe, expect, test } from "bun:test";
import { ServerTurns } from "../../src/proxy/pool/server-turns.ts";

function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe("ServerTurns", () => {
  test("calls to one server run one at a time, in the order they took their places; another server's do not wait", async () => {
    const turns = new ServerTurns();
    const events: string[] = [];
    const first = gate();
    const a = turns.reserve("crm").run(async () => (events.push("a start"), await first.opened, events.push("a end")));
    const b = turns.reserve("crm").run(async () => events.push("b"));
    const c = turns.reserve("fs").run(async () => events.push("c"));
    await c;
    expect(events).toEqual(["a start", "c"]);
    first.open();
    await Promise.all([a, b]);
    expect(events).toEqual(["a start", "c", "a end", "b"]);
  });

  test("a call that pauses lets the calls behind it run, then goes on after them", async () => {
    const turns = new ServerTurns();
    const events: string[] = [];
    const answered = gate();
    const clientAnswered = answered.opened.then(() => void events.push("a's client answered"));
    const a = turns.reserve("notes");
    const ranA = a.run(async () => {
      events.push("a first attempt");
      await a.pause(clientAnswered);
      events.push("a retry");
    });
    const b = turns.reserve("notes").run(async () => events.push("b"));
    await b;
    expect(events).toEqual(["a first attempt", "b"]);
    // A call that came while A was paused queues behind A's return.
    const later = gate();
    const c = turns.reserve("notes").run(async () => (events.push("c start"), await later.opened, events.push("c end")));
    answered.open();
    await clientAnswered;
    expect(events).toEqual(["a first attempt", "b", "c start", "a's client answered"]);
    later.open();
    await Promise.all([ranA, c]);
    expect(events).toEqual(["a first attempt", "b", "c start", "a's client answered", "c end", "a retry"]);
  });

  test("a place given up without running does not hold the calls behind it", async () => {
    const turns = new ServerTurns();
    const held = turns.reserve("crm");
    const next = turns.reserve("crm").run(async () => "ran");
    held.release();
    expect(await next).toBe("ran");
  });

  test("a call that wrote early lets the next begin (handed its read); the next may write once it is done, and its reads stand", async () => {
    const turns = new ServerTurns();
    const events: string[] = [];
    const answered = gate();
    const a = turns.reserve("crm").run(async (running) => {
      running.written("a's post-read", { early: true });
      events.push("a sent");
      await answered.opened;
      events.push("a done");
    });
    const b = turns.reserve("crm").run(async (running) => {
      events.push(`b begins, handed ${String(running.handed)}, early ${running.beganEarly}`);
      const stands = await running.mayWrite();
      events.push(`b may write: reads stand ${stands}`);
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(events).toEqual(["a sent", "b begins, handed a's post-read, early true"]);
    answered.open();
    await Promise.all([a, b]);
    expect(events.at(-1)).toBe("b may write: reads stand true");
    expect(events).toEqual(["a sent", "b begins, handed a's post-read, early true", "a done", "b may write: reads stand true"]);
  });

  test("when the early write was not over (a task, input, a resend), the next call learns its reads do not stand; afresh, it may write", async () => {
    const turns = new ServerTurns();
    const answered = gate();
    const a = turns.reserve("crm").run(async (running) => {
      running.written("stale", { early: true });
      await answered.opened;
      running.readsDoNotStand();
    });
    const seen: unknown[] = [];
    const b = turns.reserve("crm").run(async (running) => {
      seen.push(await running.mayWrite());
      const again = running.afresh();
      seen.push(again.handed, again.beganEarly, await again.mayWrite());
    });
    answered.open();
    await Promise.all([a, b]);
    expect(seen).toEqual([false, undefined, false, true]);
  });

  test("a call after one that wrote the usual way (its write answered) began late, and its reads stand", async () => {
    const turns = new ServerTurns();
    const a = turns.reserve("crm").run(async (running) => running.written("post-read"));
    const b = turns.reserve("crm").run(async (running) => [running.handed, running.beganEarly, await running.mayWrite()]);
    await a;
    expect(await b).toEqual(["post-read", false, true]);
  });

  test("a place between two calls that writes nothing (given up, or run without writing) passes on that the call before wrote early, and whether its reads stand", async () => {
    for (const between of ["released", "ran"] as const) {
      const turns = new ServerTurns();
      const answered = gate();
      const a = turns.reserve("crm").run(async (running) => {
        running.written("a's post-read", { early: true });
        await answered.opened;
        running.readsDoNotStand();
      });
      const b = turns.reserve("crm");
      const ranB = between === "released" ? (b.release(), Promise.resolve()) : b.run(async () => {});
      const seen: unknown[] = [];
      const c = turns.reserve("crm").run(async (running) => {
        seen.push(running.beganEarly);
        seen.push(await running.mayWrite());
      });
      answered.open();
      await Promise.all([a, ranB, c]);
      expect({ between, seen }).toEqual({ between, seen: [true, false] });
    }
  });
});
