// The binary starts with JavaScriptCore's JIT reluctant to compile
// (--compile-jit-policy, scripts/build.ts): what runs at a process's start
// (loading the code, the manifest, the journal, starting servers) runs once or
// a few times, and compiling it cost more CPU than it saved. A process that
// goes on to serve calls asks for the normal policy once its start is over, so
// the paths every call takes are compiled as usual.
export function startupOver(): void {
  Bun.unsafe.setJITPolicy(1);
}
