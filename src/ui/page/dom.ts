/// <reference lib="dom" />
// Building the page's DOM. Text goes in as text nodes and attributes through
// setAttribute: nothing from the journal is ever parsed as HTML.

/**
 * Text from outside made safe to look at: control characters and bidi
 * overrides become "�" (as render/style.ts printable() does for terminals),
 * except the line breaks and tabs of a multi-line value.
 */
export function visible(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
}

export type Child = Node | string | number | null | undefined | false;
type Handler = (event: Event) => void;
export type Props = Record<string, string | boolean | undefined | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else if (typeof value === "string") element.setAttribute(name, value);
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(visible(String(child))) : child);
  }
}

/**
 * Make `container`'s children show `items`, keyed: an item whose content did
 * not change keeps its element (and with it keyboard focus and typed text).
 */
export function reconcile<T>(container: Element, items: T[], key: (item: T) => string, render: (item: T) => HTMLElement): void {
  const existing = new Map<string, HTMLElement>();
  for (const child of Array.from(container.children) as HTMLElement[]) existing.set(child.dataset.key ?? "", child);
  let previous: Element | null = null;
  for (const item of items) {
    const k = key(item);
    const signature = JSON.stringify(item);
    let node = existing.get(k);
    existing.delete(k);
    if (!node || node.dataset.signature !== signature) {
      const fresh = render(item);
      fresh.dataset.key = k;
      fresh.dataset.signature = signature;
      if (node) node.replaceWith(fresh);
      node = fresh;
    }
    const wanted: Element | null = previous ? previous.nextElementSibling : container.firstElementChild;
    if (wanted !== node) container.insertBefore(node, wanted);
    previous = node;
  }
  for (const stale of existing.values()) stale.remove();
}

/** Say something to screen readers (and keep it on the page for everyone in `where`, when given). */
export function announce(text: string): void {
  const region = document.getElementById("announce");
  if (region) region.textContent = text;
}
