// load.mjs — imports a package installed by scripts/setup.d/30-evolu.sh.
//
// The scripts live in the repo while node_modules live in the cache
// ($FERRY_CACHE/evolu/<dir>), so a bare `import "@evolu/common"` would not
// resolve. importFrom resolves the specifier from the install directory named
// by an environment variable and imports the resolved file.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Imports `specifier` as resolved from the directory in env var `envName`.
 * @param {string} envName e.g. "FERRY_EVOLU_CLIENT_DIR"
 * @param {string} specifier e.g. "@evolu/common/local-first"
 */
export const importFrom = async (envName, specifier) => {
  const dir = process.env[envName];
  if (!dir) throw new Error(`${envName} is not set (run scripts/setup.d/30-evolu.sh)`);
  const require = createRequire(join(dir, "package.json"));
  return import(pathToFileURL(require.resolve(specifier)).href);
};
