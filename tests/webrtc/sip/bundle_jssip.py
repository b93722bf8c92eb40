"""A browser bundle of JsSIP from node_modules/ (npm ci in this folder).

JsSIP's npm package (3.11 and later) ships only its CommonJS sources (lib/),
no dist/jssip.min.js any more; rather than pulling in a bundler, this walks
the require() graph from lib/JsSIP.js and wraps every module in a function,
browserify style, with a tiny require() per module. Packages resolve through
their package.json "browser" field (debug's browser build), then "main".

    python3 bundle_jssip.py > jssip.js     # defines window.JsSIP
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "node_modules")
REQUIRE = re.compile(r"""\brequire\(\s*['"]([^'"]+)['"]\s*\)""")


def _file(path):
    for cand in (path, path + ".js", path + ".json", os.path.join(path, "index.js")):
        if os.path.isfile(cand):
            return cand
    return None


def _resolve(name, from_dir):
    if name.startswith("."):
        found = _file(os.path.normpath(os.path.join(from_dir, name)))
    else:
        pkg = os.path.join(NODE_MODULES, name)
        meta = json.load(open(os.path.join(pkg, "package.json")))
        entry = meta.get("browser") if isinstance(meta.get("browser"), str) else None
        found = _file(os.path.normpath(os.path.join(pkg, entry or meta.get("main") or "index.js")))
    if not found:
        raise FileNotFoundError("cannot resolve require(%r) from %s" % (name, from_dir))
    return found


def jssip_version():
    return json.load(open(os.path.join(NODE_MODULES, "jssip", "package.json")))["version"]


def bundle():
    entry = os.path.join(NODE_MODULES, "jssip", "lib", "JsSIP.js")
    if not os.path.isfile(entry):
        raise FileNotFoundError("%s missing: run `npm ci` in %s" % (entry, HERE))
    ids, order, maps = {}, [], {}
    todo = [entry]
    ids[entry] = 0
    order.append(entry)
    while todo:
        path = todo.pop()
        src = open(path, encoding="utf-8").read()
        m = {}
        if not path.endswith(".json"):
            for name in sorted(set(REQUIRE.findall(src))):
                dep = _resolve(name, os.path.dirname(path))
                if dep not in ids:
                    ids[dep] = len(order)
                    order.append(dep)
                    todo.append(dep)
                m[name] = ids[dep]
        maps[ids[path]] = m
    out = ["/* JsSIP %s bundled by bundle_jssip.py from node_modules/ (MIT; see node_modules/jssip/LICENSE.md) */"
           % jssip_version(), "(function () {", "var defs = [];"]
    for path in order:
        src = open(path, encoding="utf-8").read()
        rel = os.path.relpath(path, NODE_MODULES)
        if path.endswith(".json"):
            body = "module.exports = %s;" % src
        else:
            body = src
        out.append("// %s\ndefs[%d] = [function (module, exports, require) {\n%s\n}, %s];"
                   % (rel, ids[path], body, json.dumps(maps[ids[path]])))
    out.append("""var cache = {};
function load(id) {
  if (cache[id]) return cache[id].exports;
  var module = cache[id] = { exports: {} };
  var map = defs[id][1];
  defs[id][0].call(module.exports, module, module.exports, function (name) {
    if (!(name in map)) throw new Error('bundle: no module ' + name);
    return load(map[name]);
  });
  return module.exports;
}
window.JsSIP = load(0);
})();""")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(bundle())
