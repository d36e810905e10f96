// How much of JavaScriptCore's JIT a process uses.
//
// The binary starts with the JIT reluctant to compile (--compile-jit-policy,
// scripts/build.ts): what runs at a process's start (loading the code, the
// manifest, the journal, starting servers) runs once or a few times, and
// compiling it cost more CPU than it saved. A process that goes on to serve
// calls asks for the normal policy once its start is over (startupOver).
//
// With SYNARTESIS_JIT=0 a proxy runs without the JIT at all (withoutJit): the
// JIT is most of what a proxy's memory grows by while it records — 1000 writes
// through it peak at about 57 MB without it, about 90 MB with it — but each call
// then costs the proxy about 0.1–0.2 ms more (issue 20; README "Speed at
// scale"), so it is a choice, not the default.
import { selfArgv } from "./self.ts";

/** Set in the environment of a process that switched its own JIT off: what it starts gets the JIT back. */
const SWITCHED_OFF = "SYNARTESIS_JIT_SWITCHED_OFF";

export function startupOver(): void {
  Bun.unsafe.setJITPolicy(1);
}

/**
 * With SYNARTESIS_JIT=0, become this same command without the JIT: the process
 * image is replaced (execve: same pid, same stdin and stdout, nothing read
 * from them yet) by one started with BUN_JSC_useJIT=0, which JavaScriptCore
 * reads only at start. Nothing happens when the JIT was set explicitly
 * (BUN_JSC_useJIT), or where the platform cannot replace a process image.
 */
export function withoutJit(): void {
  const env = process.env;
  if (env.SYNARTESIS_JIT !== "0" || env.BUN_JSC_useJIT !== undefined || typeof process.execve !== "function") return;
  try {
    process.execve(process.execPath, [...selfArgv(), ...process.argv.slice(2)], { ...env, BUN_JSC_useJIT: "0", [SWITCHED_OFF]: "1" });
  } catch {
    // Not replaced (a platform without execve): the proxy keeps the JIT.
  }
}

/** `env` for a process this one starts: without the JIT settings that made withoutJit() switch this one off. */
export function childEnvironment(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return env[SWITCHED_OFF] ? { ...env, BUN_JSC_useJIT: undefined, SYNARTESIS_JIT: undefined, [SWITCHED_OFF]: undefined } : env;
}
