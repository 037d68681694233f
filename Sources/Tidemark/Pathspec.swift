/// git's pathspecs with their magic, for `diff -- <path>...`: `:(exclude)` (`:!`, `:^`),
/// `:(glob)`, `:(icase)`, `:(literal)` and `:(top)` (`:/`), long (`:(glob,icase)items/**`) or
/// short (`:!items/3f*`). A path is kept when it matches a pathspec that excludes nothing (or
/// there is none) and none that excludes (gitglossary's "pathspec").
struct Pathspec: Equatable {
    /// From the working tree's root.
    var pattern: String
    var exclude = false, glob = false, icase = false, literal = false

    /// Whether `text` carries magic other than `:/` (from the root), which paths resolve alone.
    static func hasMagic(_ text: String) -> Bool {
        guard text.hasPrefix(":") else { return false }
        guard !text.hasPrefix(":("), case let (top, exclude, rest) = shortMagic(text) else { return true }
        return exclude || !(top && text == ":/" + rest)
    }

    /// Parses `text` given in the folder `prefix` names (git's `.` and `..` resolved).
    static func parse(_ text: String, under prefix: [Substring]) throws(MirrorError) -> Pathspec {
        var spec = Pathspec(pattern: "")
        var top = false
        var rest = text
        if text.hasPrefix(":(") {
            guard let close = text.firstIndex(of: ")") else {
                throw .invalidArgument("missing ')' at the end of pathspec magic in '\(text)'")
            }
            for word in text[text.index(text.startIndex, offsetBy: 2)..<close].split(separator: ",", omittingEmptySubsequences: false) {
                switch word {
                case "top": top = true
                case "exclude": spec.exclude = true
                case "glob": spec.glob = true
                case "icase": spec.icase = true
                case "literal": spec.literal = true
                case _ where word.hasPrefix("attr:"):
                    throw .invalidArgument("pathspec magic 'attr' is not supported (in '\(text)')")
                default:
                    throw .invalidArgument("invalid pathspec magic '\(word)' in '\(text)'")
                }
            }
            rest = String(text[text.index(after: close)...])
        } else if text.hasPrefix(":") {
            (top, spec.exclude, rest) = shortMagic(text)
        }
        if spec.glob && spec.literal { throw .invalidArgument("'literal' and 'glob' are incompatible (in '\(text)')") }
        spec.pattern = try Mirror.joined(rest, under: top ? [] : prefix)
        // A trailing slash (a folder) is kept: git matches it only as a folder.
        if rest.hasSuffix("/"), !spec.pattern.isEmpty { spec.pattern += "/" }
        return spec
    }

    /// Short magic (`:/`, `:!`, `:^`, ended by a `:` or by any other character) of `text`, which
    /// starts with `:`: whether it says top or exclude, and the pattern after it.
    private static func shortMagic(_ text: String) -> (top: Bool, exclude: Bool, rest: String) {
        let magic = text.dropFirst().prefix { "/!^".contains($0) }
        var rest = text.dropFirst(1 + magic.count)
        if rest.hasPrefix(":") { rest = rest.dropFirst() }
        return (magic.contains("/"), magic.contains { $0 != "/" }, String(rest))
    }

    /// Whether `path` (from the root) matches, excluding or not: exactly, as a file inside the
    /// folder the pattern names, or by `wildmatch` (unless literal; `*` crossing `/` unless glob).
    func matches(_ path: String) -> Bool {
        if pattern.isEmpty { return true }
        let folded = { (text: String) in icase ? String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self) : text }
        let name = folded(path), spec = folded(pattern)
        if name == spec { return true }
        if literal || !Wildmatch.hasWildcard(pattern) {
            return spec.hasSuffix("/") ? name.hasPrefix(spec) : name.hasPrefix(spec + "/")
        }
        return Wildmatch.matches(pattern, path, pathname: glob, caseFold: icase)
    }

    /// Whether `path` is kept by `specs`: it matches one that excludes nothing (or all exclude)
    /// and none that excludes.
    static func keeps(_ path: String, _ specs: [Pathspec]) -> Bool {
        let including = specs.filter { !$0.exclude }
        return (including.isEmpty || including.contains { $0.matches(path) }) && !specs.contains { $0.exclude && $0.matches(path) }
    }
}
