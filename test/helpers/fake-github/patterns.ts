/**
 * GitHub's ref-name patterns (fnmatch style, as branch protection and rulesets use them): `*`
 * stays within a path segment, `**` crosses segments (and `**` followed by a slash may match no
 * segment at all), `?` is one character.
 */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === "*" && glob.charAt(i + 1) === "*") {
      if (glob.charAt(i + 2) === "/") {
        out += "(?:.*/)?";
        i += 2;
      } else {
        out += ".*";
        i++;
      }
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

export function matchesGlob(glob: string, name: string): boolean {
  return globToRegExp(glob).test(name);
}
