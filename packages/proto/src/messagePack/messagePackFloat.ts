// A float that must stay a float. MessagePack, like Ruby, tells the float 2.0 from the integer
// 2; a JS number does not, and the writer writes a whole number as an integer. A reader that
// must keep the difference (the CLI prints 2.0 as 2.0) reads floats as this, and the writer
// writes it as a float64 whatever its value.

/** A MessagePack float: written as a float64 even when its value is a whole number. */
export class MessagePackFloat {
  constructor(readonly value: number) {}
}
