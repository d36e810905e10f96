// A JSON-RPC id as the peer wrote it: its exact text (an id is echoed byte
// for byte) and the key requests are told apart by.

/** A request's id: `text` is the exact bytes its sender wrote (echoed back as they came), `key` its identity. */
export interface MessageId {
  text: string;
  key: string;
}
