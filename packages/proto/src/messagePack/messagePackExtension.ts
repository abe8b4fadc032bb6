// A MessagePack extension value: an application type the SDK does not interpret (a Ruby writer's
// registered type, msgpack-ruby's README registering Symbol as type 0), kept as its type and
// bytes so that a body read and written back stores the same MessagePack. The timestamp
// extension (-1) is the one type the SDK reads as a value of its own, a Date.

/** An extension value of a cell body, read and written as its type and bytes. */
export class MessagePackExtension {
  /** The extension's bytes. */
  readonly data: Buffer;

  /**
   * @param type the extension type, -128 to 127 (negative types are reserved by MessagePack)
   * @param data its bytes, copied: the value stays what it was read or made as
   * @throws RangeError for a type outside -128..127
   */
  constructor(
    readonly type: number,
    data: Uint8Array,
  ) {
    if (!Number.isInteger(type) || type < -128 || type > 127) {
      throw new RangeError(`a MessagePack extension type is an integer of -128..127, got ${type}`);
    }
    this.data = Buffer.from(data);
  }

  /** `JSON.stringify` writes it as its type and its bytes in base64. */
  toJSON(): { extension: number; base64: string } {
    return { extension: this.type, base64: this.data.toString('base64') };
  }
}
