// The answers to a batch from a stdio client (JSON-RPC 2.0; MCP 2025-03-26):
// one array, written once every request in it has ended. What a server sends
// on a request's behalf meanwhile (a request for input the client must answer
// first) goes out at once.
import { deservesAnswer, type Frame } from "../../jsonrpc/frames.ts";
import type { RequestChannel } from "./client-request.ts";

/** Whether a message of a batch is owed an answer: a request, or an invalid message that is not a response. */
export function wantsAnswer(frame: Frame): boolean {
  return frame.kind === "request" || (frame.kind === "invalid" && frame.looksLike !== "response" && deservesAnswer(frame));
}

/** One channel for every message of a batch that wants an answer (`expected` of them); answers go to `output` together. */
export function batchChannel(expected: number, output: RequestChannel): RequestChannel {
  const answers: string[] = [];
  let ended = 0;
  return {
    send: (line) => output.send(line),
    end(answer) {
      if (answer !== undefined) answers.push(answer);
      // A request cancelled by the client has no answer; a batch that ends with none is answered with nothing.
      if (++ended === expected && answers.length > 0) output.end(`[${answers.join(",")}]`);
    },
  };
}
