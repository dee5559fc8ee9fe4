// The main job in one cell: find a unit converter, read its schema, convert 10 km to miles.
// Three bridge calls (search → describe → call), each through the gateway's full call path.
const hits = await openclaw.tools.search("convert units", { limit: 3 });
const hit = hits.find((h) => h.name === "convert_units") ?? hits[0];
const tool = await openclaw.tools.describe(hit.id);
console.log(`using ${tool.id}: ${tool.input}`);
const { result } = await openclaw.tools.call(tool.id, { value: 10, from_unit: "km", to_unit: "mi" });
return { found: hits.map((h) => h.id), tool: tool.id, miles: result.details.result };
