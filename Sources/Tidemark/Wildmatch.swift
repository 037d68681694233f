/// git's `wildmatch` (wildmatch.c), which matches pathspecs and ignore patterns: `*`, `?`,
/// `[...]` (ranges, `!`/`^` negation, `[:alpha:]` classes, `\` escapes) and, with `pathname`,
/// `*` and `?` stopping at `/` while `**` between slashes crosses any number of folders.
enum Wildmatch {
    private enum Outcome { case match, noMatch, abortAll, abortToStarStar }

    /// Whether `text` matches `pattern`, both compared byte by byte (`caseFold`: ASCII letters
    /// in either case).
    static func matches(_ pattern: String, _ text: String, pathname: Bool, caseFold: Bool) -> Bool {
        // A NUL after each ends it, as in C: the algorithm reads one byte past either's end.
        let p = Array(pattern.utf8) + [0], t = Array(text.utf8) + [0]
        return match(p, 0, t, 0, pathname: pathname, caseFold: caseFold) == .match
    }

    /// Whether `pattern` holds a byte `wildmatch` treats as special.
    static func hasWildcard(_ pattern: String) -> Bool {
        pattern.utf8.contains { isGlobSpecial($0) }
    }

    private static func isGlobSpecial(_ c: UInt8) -> Bool { c == 42 || c == 63 || c == 91 || c == 92 }  // * ? [ \

    private static func lower(_ c: UInt8, _ fold: Bool) -> UInt8 { fold && (65...90).contains(c) ? c + 32 : c }

    private static func match(_ p: [UInt8], _ start: Int, _ t: [UInt8], _ textStart: Int,
                              pathname: Bool, caseFold: Bool) -> Outcome {
        var pi = start, ti = textStart
        while p[pi] != 0 {
            var pc = lower(p[pi], caseFold)
            var tc = t[ti]
            if tc == 0 && pc != 42 { return .abortAll }
            tc = lower(tc, caseFold)
            switch pc {
            case 63:  // ?
                if pathname && tc == 47 { return .noMatch }
            case 42:  // *
                var matchSlash: Bool
                pi += 1
                if p[pi] == 42 {
                    let before = pi - 2
                    while p[pi] == 42 { pi += 1 }
                    if !pathname {
                        matchSlash = true  // without pathname, `*` is `**`
                    } else if (before < start || p[before] == 47) && (p[pi] == 0 || p[pi] == 47 || (p[pi] == 92 && p[pi + 1] == 47)) {
                        if p[pi] == 47 && match(p, pi + 1, t, ti, pathname: pathname, caseFold: caseFold) == .match { return .match }
                        matchSlash = true
                    } else {
                        matchSlash = false
                    }
                } else {
                    matchSlash = !pathname
                }
                if p[pi] == 0 {
                    if !matchSlash && t[ti...].contains(47) { return .noMatch }
                    return .match
                }
                if !matchSlash && p[pi] == 47 {
                    guard let slash = t[ti...].firstIndex(of: 47) else { return .noMatch }
                    // The slash is matched by the loop's next round.
                    ti = slash + 1
                    pi += 1
                    continue
                }
                while true {
                    if tc == 0 { break }
                    if !isGlobSpecial(p[pi]) {
                        let next = lower(p[pi], caseFold)
                        while t[ti] != 0 && (matchSlash || t[ti] != 47) {
                            tc = lower(t[ti], caseFold)
                            if tc == next { break }
                            ti += 1
                        }
                        tc = lower(t[ti], caseFold)
                        if tc != next { return .noMatch }
                    }
                    let outcome = match(p, pi, t, ti, pathname: pathname, caseFold: caseFold)
                    if outcome != .noMatch {
                        if !matchSlash || outcome != .abortToStarStar { return outcome }
                    } else if !matchSlash && tc == 47 {
                        return .abortToStarStar
                    }
                    ti += 1
                    tc = lower(t[ti], caseFold)
                }
                return .abortAll
            case 91:  // [
                pi += 1
                pc = p[pi]
                if pc == 94 { pc = 33 }  // ^ is !
                let negated = pc == 33
                if negated { pi += 1; pc = p[pi] }
                var previous: UInt8 = 0
                var matched = false
                repeat {
                    if pc == 0 { return .abortAll }
                    if pc == 92 {
                        pi += 1
                        pc = p[pi]
                        if pc == 0 { return .abortAll }
                        if tc == pc { matched = true }
                    } else if pc == 45 && previous != 0 && p[pi + 1] != 0 && p[pi + 1] != 93 {
                        pi += 1
                        pc = p[pi]
                        if pc == 92 { pi += 1; pc = p[pi]; if pc == 0 { return .abortAll } }
                        if tc <= pc && tc >= previous {
                            matched = true
                        } else if caseFold && (97...122).contains(tc), tc - 32 <= pc && tc - 32 >= previous {
                            matched = true
                        }
                        pc = 0  // so that `previous` becomes 0
                    } else if pc == 91 && p[pi + 1] == 58 {  // [:class:]
                        let nameStart = pi + 2
                        var end = nameStart
                        while p[end] != 0 && p[end] != 93 { end += 1 }
                        if p[end] == 0 { return .abortAll }
                        guard end - nameStart >= 1, p[end - 1] == 58 else {
                            // No `:]`: a literal `[`, and the rest as set members.
                            if tc == 91 { matched = true }
                            previous = pc
                            pi += 1
                            pc = p[pi]
                            continue
                        }
                        let name = String(decoding: p[nameStart..<(end - 1)], as: UTF8.self)
                        guard let inClass = characterClass(name) else { return .abortAll }
                        if inClass(tc) || (caseFold && name == "upper" && (97...122).contains(tc)) { matched = true }
                        pi = end
                        pc = 0
                    } else if tc == pc {
                        matched = true
                    }
                    previous = pc
                    pi += 1
                    pc = p[pi]
                } while pc != 93
                if matched == negated || (pathname && tc == 47) { return .noMatch }
            case 92:  // \: the next byte as it is (not folded, as in git)
                pi += 1
                if tc != p[pi] { return .noMatch }
            default:
                if tc != pc { return .noMatch }
            }
            pi += 1
            ti += 1
        }
        return t[ti] == 0 ? .match : .noMatch
    }

    private static func characterClass(_ name: String) -> ((UInt8) -> Bool)? {
        switch name {
        case "alnum": { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) }
        case "alpha": { (65...90).contains($0) || (97...122).contains($0) }
        case "blank": { $0 == 32 || $0 == 9 }
        case "cntrl": { $0 < 32 || $0 == 127 }
        case "digit": { (48...57).contains($0) }
        case "graph": { (33...126).contains($0) }
        case "lower": { (97...122).contains($0) }
        case "print": { (32...126).contains($0) }
        case "punct": { (33...47).contains($0) || (58...64).contains($0) || (91...96).contains($0) || (123...126).contains($0) }
        case "space": { $0 == 32 || (9...13).contains($0) }
        case "upper": { (65...90).contains($0) }
        case "xdigit": { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
        default: nil
        }
    }
}
