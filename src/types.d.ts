// Text imports: the shipped manifests are bundled into the binary.
declare module "*.yaml" {
  const text: string;
  export default text;
}

// PostgreSQL's parser compiled to WebAssembly (libpg-query): its Emscripten
// module factory, and the .wasm file embedded into the binary as a file.
declare module "libpg-query/wasm/libpg-query.js" {
  const createModule: (options: { wasmBinary: ArrayBuffer }) => Promise<unknown>;
  export default createModule;
}
declare module "*.wasm" {
  const path: string;
  export default path;
}
