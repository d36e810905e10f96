// The review page's files (HTML, CSS, JS), embedded in the binary: `bun build
// --compile` bundles the HTML import and lists its files; running from source,
// the same bundle is built once at start. Nothing is fetched from elsewhere.
import { join } from "node:path";
import page from "./page/index.html";

export interface Asset {
  body: Blob;
  type: string;
}

export interface Assets {
  /** The page (every page path serves it; the script decides what to show). */
  html: Asset;
  /** Scripts and styles by URL path ("/chunk-….js"). */
  files: Map<string, Asset>;
}

export async function loadAssets(): Promise<Assets> {
  const files = new Map<string, Asset>();
  let html: Asset | undefined;
  if (page.files?.length) {
    for (const file of page.files) {
      const asset = { body: Bun.file(file.path), type: file.headers["content-type"] };
      if (file.loader === "html") html = asset;
      else files.set(`/${file.path.split("/").pop()}`, asset);
    }
  } else {
    const built = await Bun.build({ entrypoints: [join(import.meta.dir, "page", "index.html")], minify: true, publicPath: "/" });
    if (!built.success) throw new Error(`cannot build the review page: ${built.logs.map(String).join("; ")}`);
    for (const output of built.outputs) {
      const asset = { body: output, type: output.type };
      if (output.path.endsWith(".html")) html = asset;
      else files.set(`/${output.path.replace(/^\.\//, "")}`, asset);
    }
  }
  if (!html) throw new Error("the review page's HTML is missing from this build");
  return { html, files };
}
