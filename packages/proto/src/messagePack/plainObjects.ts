// MessagePack maps with string keys are plain JS objects on both sides of the wire: the reader
// builds them, the writer and the bodies' JSON (the SDK's typed bodies, the server CLI's forms)
// tell them from class instances, arrays, Maps and Buffers.

/** An object of no class: `{}` or `Object.create(null)`, not an array, a Map, a Buffer, ... */
export function isPlainObject(value: unknown): value is { [key: string]: unknown } {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Sets an own key, `__proto__` included (a plain assignment would change the prototype). */
export function setOwnKey(object: { [key: string]: unknown }, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    object[key] = value;
  }
}
