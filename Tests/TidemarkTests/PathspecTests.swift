import Foundation
import Testing
import TestSupport
@testable import Tidemark

@Suite("Pathspecs with magic, matched as git matches them")
struct PathspecTests {
    /// Cases from git's t3070-wildmatch.sh: (text, pattern, with pathname (glob), without).
    @Test func wildmatchAgreesWithGitsOwnCases() {
        let cases: [(String, String, Bool, Bool)] = [
            ("foo", "foo", true, true), ("foo", "bar", false, false), ("foo", "???", true, true), ("foo", "??", false, false),
            ("foo", "*", true, true), ("foo", "f*", true, true), ("foo", "*f", false, false), ("foo", "*foo*", true, true),
            ("foobar", "*ob*a*r*", true, true), ("aaaaaaabababab", "*ab", true, true), ("foo*", "foo\\*", true, true),
            ("foobar", "foo\\*bar", false, false), ("f\\oo", "f\\\\oo", true, true), ("ball", "*[al]?", true, true),
            ("ten", "[ten]", false, false), ("ten", "**[!te]", true, true), ("ten", "**[!ten]", false, false),
            ("ten", "t[a-g]n", true, true), ("ten", "t[!a-g]n", false, false), ("ton", "t[!a-g]n", true, true),
            ("ton", "t[^a-g]n", true, true), ("a]b", "a[]]b", true, true), ("a-b", "a[]-]b", true, true),
            ("a]b", "a[]-]b", true, true), ("aab", "a[]-]b", false, false), ("aab", "a[]a-]b", true, true),
            ("foo/baz/bar", "foo*bar", false, true), ("foo/baz/bar", "foo**bar", false, true), ("foobazbar", "foo**bar", true, true),
            ("foo/baz/bar", "foo/**/bar", true, true), ("foo/baz/bar", "foo/**/**/bar", true, false),
            ("foo/b/a/z/bar", "foo/**/bar", true, true), ("foo/bar", "foo/**/bar", true, false), ("foo/bar", "foo?bar", false, true),
            ("foo/bar", "foo[/]bar", false, true), ("foo", "**/foo", true, false), ("bar/baz/foo", "**/foo", true, true),
            ("bar/baz/foo", "*/foo", false, true), ("foo/bar/baz", "**/bar*", false, true), ("deep/foo/bar/baz", "**/bar/*", true, true),
            ("deep/foo/bar", "**/bar/*", false, false), ("foo/bar/baz/x", "*/bar/**", true, true),
            ("deep/foo/bar/baz/x", "*/bar/**", false, true), ("deep/foo/bar/baz/x", "**/bar/*/*", true, true),
            ("a1B", "[[:alpha:]][[:digit:]][[:upper:]]", true, true), ("a", "[[:digit:][:upper:][:space:]]", false, false),
            ("5", "[[:xdigit:]]", true, true), ("[ab]", "\\[ab]", true, true), ("?a?b", "\\??\\?b", true, true),
        ]
        for (text, pattern, withPathname, without) in cases {
            #expect(Wildmatch.matches(pattern, text, pathname: true, caseFold: false) == withPathname, "glob \(pattern) \(text)")
            #expect(Wildmatch.matches(pattern, text, pathname: false, caseFold: false) == without, "\(pattern) \(text)")
        }
        #expect(Wildmatch.matches("ITEMS/*.JSON", "items/a.json", pathname: true, caseFold: true))
        #expect(!Wildmatch.matches("ITEMS/*.JSON", "items/a.json", pathname: true, caseFold: false))
        // A malformed class or an unended one matches nothing, and crashes nothing.
        for pattern in ["[[:nosuch:]]", "[abc", "a[", "\\", "[!", "[a-"] {
            #expect(!Wildmatch.matches(pattern, "a", pathname: true, caseFold: false), "\(pattern)")
        }
    }

    /// Each pathspec (alone, and in the folder a user may be in) keeps the paths `git diff
    /// --name-only` shows for it between the empty tree and a commit of all the paths.
    @Test func pathspecsKeepWhatGitDiffKeeps() async throws {
        try await withScratch { root in
            let repository = root + "/repo"
            let paths = ["x/foo", "x/bar", "x/foobar", "x/ball", "x/ten", "x/ton", "x/a]b", "x/a-b", "x/aab", "x/Foo.JSON", "x/foo*",
                         "deep/foo/bar/baz/x", "deep/foo/bar/q", "foo/baz/bar", "foo/b/a/z/bar", "foo/bar", "foobazbar", "bar/baz/foo",
                         "items/3f/a.json", "items/3f/B.json", "items/40/c.json", ".tidemark/items.manifest", "notes.txt", "docs/READ ME.md"]
            for path in paths {
                let file = URL(fileURLWithPath: repository + "/" + path)
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(path.utf8).write(to: file)
            }
            try git(["init", "-q"], in: repository)
            try git(["add", "-A"], in: repository)
            try git(["-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "all"], in: repository)
            let emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
            let cases: [(folder: String, specs: [String])] = [
                ("", [":(glob)*"]), ("", [":(glob)**"]), ("", [":(glob)x/*"]), ("", [":(glob)**/foo"]), ("", [":(glob)foo/**/bar"]),
                ("", [":(glob)foo*bar"]), ("", ["foo*bar"]), ("", [":(glob)**/bar/**"]), ("", [":(glob)*/bar/**"]),
                ("", [":(glob)x/t[!a-g]n"]), ("", [":(glob)x/a[]-]b"]), ("", [":(glob)x/[[:upper:]]*"]), ("", ["x/foo*"]),
                ("", [":(literal)x/foo*"]), ("", [":(glob,icase)x/foo.json"]), ("", [":(icase)X/F*"]), ("", [":(icase)ITEMS"]),
                ("", [":!x"]), ("", [":^x/*"]), ("", [":(exclude,glob)**/bar"]), ("", ["items/3f/"]), ("", [":(glob)items/3f"]),
                ("", ["*.json"]), ("", ["x", ":!x/f*"]), ("", [":(glob)**/*.json", ":!items/40"]), ("", [":/!notes.txt", "items", "docs"]),
                ("", [":docs"]), ("", [":!:x"]), ("", [":(top,exclude)x", ":(top)foo"]),
                ("items", ["3f"]), ("items", [":!3f"]), ("items", [":(glob)*/a.json"]), ("items", [":/x/ton"]), ("items", ["../x/foo"]),
                ("items", [":(top,glob)*"]), ("items/3f", [":(exclude)a.json", ".."]), ("items", [":(icase)3F/b.JSON", ":/:notes.txt"]),
            ]
            let all = paths.sorted()
            for (folder, specs) in cases {
                let expected = try git(["diff", "--name-only", emptyTree, "HEAD", "--"] + specs, in: repository + "/" + folder)
                    .split(separator: "\n").map(String.init)
                let prefix = folder.split(separator: "/")
                var parsed: [Pathspec] = []
                for spec in specs { parsed.append(try Pathspec.parse(spec, under: prefix)) }
                let kept = all.filter { Pathspec.keeps($0, parsed) }
                #expect(kept == expected, "in '\(folder)': \(specs)")
            }
        }
    }

    @Test func magicIsToldApartFromPaths() throws {
        #expect(!Pathspec.hasMagic("items/a"))
        #expect(!Pathspec.hasMagic(":/items/a"))
        #expect(Pathspec.hasMagic(":!items/a") && Pathspec.hasMagic(":/!items") && Pathspec.hasMagic(":(glob)x") && Pathspec.hasMagic(":x"))
        #expect(try Pathspec.parse(":(exclude,icase)A", under: ["d"]) == Pathspec(pattern: "d/A", exclude: true, icase: true))
        #expect(try Pathspec.parse(":^/x", under: ["d"]) == Pathspec(pattern: "x", exclude: true))
        for (text, message) in [(":(nope)x", "invalid pathspec magic 'nope' in ':(nope)x'"), (":(glob", "missing ')'"),
                                (":(glob,literal)x", "'literal' and 'glob' are incompatible"), (":(attr:a)x", "'attr' is not supported")] {
            #expect { _ = try Pathspec.parse(text, under: []) } throws: { "\($0)".contains(message) }
        }
    }
}
