/**
 * Tiny DOM builder. Rule: text is only ever set with `textContent` (job names, errors and log
 * lines come from jobs and must never be parsed as HTML); attributes are set one by one.
 */
import type { ISpan } from './ansi';
import { badgeFor } from './badges';
import { jupyterLabClass } from './jlansi';

export interface IElementOptions {
  className?: string;
  text?: string;
  attrs?: Record<string, string>;
  children?: (Node | null | undefined | false)[];
}

/** The attributes of every link that leaves JupyterLab: a new tab that cannot reach back into it. */
export const NEW_TAB: Readonly<Record<string, string>> = { target: '_blank', rel: 'noopener noreferrer' };

/** `document.createElement(tag)` with a class, text content, attributes and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  options: IElementOptions = {}
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (options.className) {
    node.className = options.className;
  }
  if (options.text !== undefined) {
    node.textContent = options.text;
  }
  for (const [name, value] of Object.entries(options.attrs ?? {})) {
    node.setAttribute(name, value);
  }
  for (const child of options.children ?? []) {
    if (child) {
      node.appendChild(child);
    }
  }
  return node;
}

/** A state badge: its label as text, its tone as a class, its meaning as a tooltip. */
export function badge(state: string): HTMLSpanElement {
  const info = badgeFor(state);
  return el('span', {
    className: `fj-Badge fj-Badge-${info.tone}`,
    text: info.label,
    attrs: { title: info.description, 'data-state': state }
  });
}

/** A button with a visible label (and an accessible name). */
export function button(label: string, onClick: () => void, options: IElementOptions = {}): HTMLButtonElement {
  const node = el('button', { ...options, text: options.text ?? label });
  node.type = 'button';
  if (!node.hasAttribute('aria-label')) {
    node.setAttribute('aria-label', label);
  }
  node.addEventListener('click', onClick);
  return node;
}

/** The DOM of one styled span of a terminal line (`ansi.ts`): plain text as a text node, colours
 * as `fj-ansi-*` classes with JupyterLab's own (`jlansi.ts`; they colour it inside a `jp-RenderedText`
 * `pre`) or inline CSS, a link as an `<a>` opening a new tab with `noopener`. */
export function spanNode(span: ISpan): HTMLElement | Text {
  if (!span.href && !span.classes.length && !span.style) {
    return document.createTextNode(span.text);
  }
  const node = span.href
    ? el('a', { text: span.text, attrs: { href: span.href, ...NEW_TAB } })
    : el('span', { text: span.text });
  if (span.classes.length) {
    node.className = span.classes
      .flatMap(name => [`fj-ansi-${name}`, jupyterLabClass(name)])
      .filter(Boolean)
      .join(' ');
  }
  if (span.style) {
    node.setAttribute('style', span.style);
  }
  return node;
}
