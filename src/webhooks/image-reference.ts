// Container image references (`[registry[:port]/]path[:tag][@digest]`), judged by the grammar the
// container runtimes pull with, so a refused reference is one no node could have pulled.

export interface ImageReference {
  /** Registry host, with port; absent when the reference names none (the runtime's default registry). */
  domain?: string;
  /** Repository path below the registry, for example `library/nginx`. */
  path: string;
  tag?: string;
  /** `algorithm:hex`, for example `sha256:…`. */
  digest?: string;
}

export type ImageReferenceResult = { ok: true; reference: ImageReference } | { ok: false; reason: string };

const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domainPattern = new RegExp(
  `^(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`,
);
const pathComponentPattern = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestHexLength = new Map([
  ['sha256', 64],
  ['sha384', 96],
  ['sha512', 128],
]);
const nameMaxLength = 255;

/** Parses an image reference; on failure says which part is wrong. */
export function parseImageReference(s: string): ImageReferenceResult {
  if (s === '') return fail('it is empty');
  if (/\s/.test(s)) return fail('it contains whitespace');

  let rest = s;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const problem = digestProblem(digest);
    if (problem) return fail(problem);
  }

  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagPattern.test(tag)) {
      return fail(
        `tag "${tag}" must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`,
      );
    }
  }

  if (rest === '') return fail('the repository name is empty');
  if (rest.length > nameMaxLength)
    return fail(`the repository name is longer than ${nameMaxLength} characters`);
  const components = rest.split('/');
  if (components.some((c) => c === '')) return fail('the repository name has an empty path component');

  // The first component is a registry only when it looks like a host (Docker's rule), so `Library/x`
  // is judged as a path and refused instead of being pulled from a host called "Library".
  let domain: string | undefined;
  const first = components[0]!;
  if (components.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!domainPattern.test(first))
      return fail(`registry "${first}" is not a host name with an optional port`);
    domain = first;
    components.shift();
  }
  for (const component of components) {
    if (pathComponentPattern.test(component)) continue;
    if (pathComponentPattern.test(component.toLowerCase()))
      return fail('the repository path must be lowercase');
    return fail(
      `path component "${component}" may hold only lowercase letters and digits joined by '.', '_', '__' or '-'`,
    );
  }

  const reference: ImageReference = { path: components.join('/') };
  if (domain !== undefined) reference.domain = domain;
  if (tag !== undefined) reference.tag = tag;
  if (digest !== undefined) reference.digest = digest;
  return { ok: true, reference };
}

/** A refusal for `field` when `value` is not an image reference, else undefined. */
export function imageReferenceRefusal(field: string, value: string): string | undefined {
  const parsed = parseImageReference(value);
  if (parsed.ok) return undefined;
  return `${field}: "${value}" is not an image reference (${parsed.reason}); write it as [registry/]repository[:tag][@sha256:digest], for example registry.example.com/mooncake:0.3.13`;
}

function digestProblem(digest: string): string | undefined {
  const [algorithm = '', hex, ...extra] = digest.split(':');
  const length = digestHexLength.get(algorithm);
  if (length === undefined || hex === undefined || extra.length > 0) {
    return `digest "${digest}" must be sha256:, sha384: or sha512: followed by lowercase hex`;
  }
  if (!new RegExp(`^[a-f0-9]{${length}}$`).test(hex)) {
    return `digest "${digest}" must carry exactly ${length} lowercase hex digits after ${algorithm}:`;
  }
  return undefined;
}

function fail(reason: string): ImageReferenceResult {
  return { ok: false, reason };
}
