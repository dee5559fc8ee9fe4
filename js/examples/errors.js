// Gateway errors reject the promise with an actionable message: unknown tools get suggestions,
// bad arguments get the JSON path, the reason and the expected signature.
const messages = [];
for (const [id, args] of [["plugin:units:convert_unitz", {}], ["plugin:units:convert_units", { value: "ten" }]]) {
  try {
    await openclaw.tools.call(id, args);
  } catch (e) {
    messages.push(e.message);
  }
}
return messages;
