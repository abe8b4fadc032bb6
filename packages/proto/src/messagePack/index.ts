// Cell bodies' MessagePack, read and written exactly: the SDK's bodies and the server CLI's
// (which must not depend on the SDK) go through this one reader and writer.
export { MessagePackExtension } from './messagePackExtension.js';
export { MessagePackFloat } from './messagePackFloat.js';
export {
  MAX_READ_DEPTH,
  MalformedMessagePack,
  MessagePackTooDeep,
  type MessagePackReadOptions,
  readMessagePack,
} from './messagePackReader.js';
export { UnencodableValueError, encodeMessagePack, isStackOverflow } from './messagePackWriter.js';
export { isPlainObject, setOwnKey } from './plainObjects.js';
export { TIMESTAMP_TYPE, type Timestamp, readTimestamp } from './timestamp.js';
