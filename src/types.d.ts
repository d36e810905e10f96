// Text imports: the shipped manifests are bundled into the binary.
declare module "*.yaml" {
  const text: string;
  export default text;
}
