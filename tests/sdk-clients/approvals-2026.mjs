// Approvals through the official TypeScript client of the 2026 wire
// (@modelcontextprotocol/client, pinned to 2026-07-28): the SDK fulfils
// the confirmation's `input_required` with its elicitation handler and
// retries; in manual mode the test replays the answer, swaps the
// arguments and edits the `requestState` — each refused with -32602.
//
// usage: node approvals-2026.mjs http://127.0.0.1:PORT/mcp
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const url = new URL(process.argv[2]);
const ARGS = { role: "Software Engineer", level: "senior" };
const YES = { action: "accept", content: { approve: true } };

async function connect(answer, options = {}) {
  const client = new Client(
    { name: "sdk-approvals-2026", version: "1.0.0" },
    {
      capabilities: answer ? { elicitation: {} } : {},
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      ...options,
    },
  );
  const asked = [];
  if (answer) {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      return answer;
    });
  }
  await client.connect(new StreamableHTTPClientTransport(url));
  return { client, asked };
}

const text = (result) => (result.content ?? []).map((c) => c.text ?? "").join(" ");

// Automatic rounds: a yes serves the call, a no refuses it.
{
  const { client, asked } = await connect(YES);
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.notEqual(result.isError, true, text(result));
  assert.ok(result.structuredContent, "structured salary band");
  assert.equal(asked.length, 1);
  assert.match(asked[0], /Senior Software Engineer/);
  await client.close();
  console.log("ok - 2026: approved through input_required, served");
}
{
  const { client } = await connect({ action: "decline" });
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.ok(!result.structuredContent);
  await client.close();
  console.log("ok - 2026: declined, refused");
}

// Manual rounds: the answer is good for one call with these arguments.
{
  const { client } = await connect(YES, { inputRequired: { autoFulfill: false } });
  const asked = await client.callTool(
    { name: "get-compensation-info", arguments: ARGS },
    { allowInputRequired: true },
  );
  assert.equal(asked.resultType, "input_required", JSON.stringify(asked));
  const key = Object.keys(asked.inputRequests)[0];
  const answer = { [key]: YES };
  const retry = (args, state) =>
    client.callTool({ name: "get-compensation-info", arguments: args, inputResponses: answer, requestState: state });
  const refused = async (args, state, what) => {
    await assert.rejects(retry(args, state), (e) => {
      assert.equal(e.code, -32602, `${what}: ${e}`);
      return true;
    });
    console.log(`ok - 2026: ${what} refused with -32602`);
  };
  await refused({ role: "Engineering Manager", level: "senior" }, asked.requestState, "swapped arguments");
  const edited = asked.requestState.slice(0, -2) + (asked.requestState.endsWith("A") ? "BB" : "AA");
  await refused(ARGS, edited, "edited requestState");
  const served = await retry(ARGS, asked.requestState);
  assert.notEqual(served.isError, true, text(served));
  await refused(ARGS, asked.requestState, "replayed answer");
  await client.close();
}

// No elicitation: refused, told why.
{
  const { client } = await connect(null);
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.match(text(result), /confirm/);
  await client.close();
  console.log("ok - 2026: no elicitation capability: refused, told why");
}
