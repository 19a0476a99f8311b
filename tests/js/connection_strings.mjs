// How the official JavaScript SDK (@azure/service-bus, pinned in package.json) reads connection
// strings: `node connection_strings.mjs <string>...`. Each is parsed by the SDK's
// parseServiceBusConnectionString and its endpoint by the WHATWG URL parser, which refuses
// an endpoint no client can use (an IPv6 address without brackets). Prints one JSON object on
// stdout: {"parsed": per string {fullyQualifiedNamespace, endpoint, hostname, port} or {error}}.
// tests/unit/test_connection_string_format.py checks the output. (Only the parsing: the SDK's
// Node HTTP client looks an IPv6 literal up with its brackets, ENOTFOUND, so it cannot reach
// the fake on ::1 whatever the string says.)
import { parseServiceBusConnectionString } from "@azure/service-bus";

function parsed(connectionString) {
  try {
    const properties = parseServiceBusConnectionString(connectionString);
    const url = new URL(properties.endpoint);
    return { fullyQualifiedNamespace: properties.fullyQualifiedNamespace,
             endpoint: properties.endpoint, hostname: url.hostname, port: url.port };
  } catch (error) {
    return { error: error.message };
  }
}

console.log(JSON.stringify({ parsed: process.argv.slice(2).map(parsed) }));
