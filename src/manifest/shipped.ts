// The manifests shipped in manifests/, bundled into the binary so `init` can
// adopt their rules for servers it recognises.
import toyCrm from "../../manifests/toy-crm.yaml" with { type: "text" };

export interface ShippedManifest {
  /** File name under manifests/. */
  file: string;
  /** What the server is, for messages. */
  title: string;
  text: string;
}

export const SHIPPED_MANIFESTS: ShippedManifest[] = [
  { file: "toy-crm.yaml", title: "the toy CRM", text: toyCrm },
];
