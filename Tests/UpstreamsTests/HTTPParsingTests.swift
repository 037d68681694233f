import Foundation
import Testing
@testable import Upstreams

@Suite struct HTTPParsingTests {
    @Test func retryAfterSeconds() {
        #expect(HTTPSession.retryAfterSeconds("3", serverDate: nil) == 3)
        #expect(HTTPSession.retryAfterSeconds(" 0 ", serverDate: nil) == 0)
        #expect(HTTPSession.retryAfterSeconds("soon", serverDate: nil) == nil)
        // Past Int's range: a wait too long to take (it was read as no header, and retried at once).
        #expect(HTTPSession.retryAfterSeconds("999999999999999999999", serverDate: nil) == 1e21)
        #expect(HTTPSession.retryAfterSeconds("-5", serverDate: nil) == 0)
        #expect(formatSeconds(1e21) == "1e+21" && formatSeconds(120) == "120" && formatSeconds(1.5) == "1.5")
    }

    @Test func retryAfterHTTPDateAgainstServerDate() {
        let wait = HTTPSession.retryAfterSeconds(
            "Sun, 06 Nov 1994 08:49:40 GMT", serverDate: "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(wait == 3)
        // A date in the past means no wait.
        #expect(HTTPSession.retryAfterSeconds("Sun, 06 Nov 1994 08:49:30 GMT", serverDate: "Sun, 06 Nov 1994 08:49:37 GMT") == 0)
    }

    @Test func httpDateForms() {
        let expected = Timestamp("1994-11-06T08:49:37Z")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.parse("Sun, 06 Foo 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("yesterday") == nil)
    }

    @Test func linkHeaderNext() {
        let value = #"<https://a.example/wp-json/wp/v2/posts?page=1>; rel="prev", <https://a.example/wp-json/wp/v2/posts?page=3&x=a,b>; rel="next""#
        #expect(LinkHeader.target(in: [value], relation: "next") == "https://a.example/wp-json/wp/v2/posts?page=3&x=a,b")
        #expect(LinkHeader.target(in: [value], relation: "last") == nil)
        #expect(LinkHeader.target(in: ["<https://x/2>; rel=next"], relation: "next") == "https://x/2")
        // A `;` inside the URI (a legal character there, a cursor's) belongs to the target: the
        // link was skipped, and the listing ended early.
        #expect(LinkHeader.target(in: [#"</list?p=4&cursor=a;b>; rel="next""#], relation: "next") == "/list?p=4&cursor=a;b")
        #expect(LinkHeader.target(in: [#"<https://x/a;b,c>;title="x;y";rel="prev next""#], relation: "next") == "https://x/a;b,c")
        #expect(LinkHeader.target(in: [#"<https://x/3>; title="rel=next; x""#], relation: "next") == nil)
    }

    @Test func specURLsWithSecretsAreRefused() {
        for bad in ["https://user:\(canary)@example.org", "https://example.org/x?access_token=\(canary)",
                    "https://example.org/x?a=1&token=\(canary)"] {
            do {
                _ = try URLSafety.specURL(bad, kind: "rest", example: "https://h/items")
                Issue.record("accepted \(bad)")
            } catch let error as UpstreamError {
                guard case .invalidConfiguration(let message) = error else { Issue.record("\(error)"); continue }
                #expect(!message.contains(canary))
            } catch {
                Issue.record("\(error)")
            }
        }
        #expect(throws: UpstreamError.self) { try URLSafety.specURL("ftp://example.org", kind: "rest", example: "") }
        #expect(throws: UpstreamError.self) { try URLSafety.specURL("", kind: "rest", example: "") }
    }

    @Test func redactedURLs() {
        let shown = URLSafety.redact("https://u:p@example.org/x?access_token=\(canary)&page=2")
        #expect(!shown.contains(canary))
        #expect(!shown.contains("u:p@"))
        #expect(shown.contains("page=2"))
        #expect(shown.contains("access_token=***"))
    }

    /// Secret parameter names are matched case-insensitively, with `-` and `_` ignored, and by
    /// their endings; the same rule refuses them in a spec URL and redacts them from messages.
    @Test(arguments: [
        "private_token", "auth_token", "api-key", "access-token", "sig", "signature", "X-Amz-Signature",
        "X-Amz-Credential", "X-Amz-Security-Token", "X-Goog-Signature", "session", "sessionid", "JSESSIONID", "jwt",
        "passwd", "pwd", "client-secret", "Client_Secret", "refresh_token", "apiKey", "key", "password", "Token",
    ])
    func secretParametersAreRefusedAndRedacted(_ name: String) {
        // After `&`, and after `;`, which many servers take as a separator too (it was stored,
        // and shown by -v).
        for (query, redacted) in [("page=2&\(name)=\(canary)", "page=2&\(name)=***"),
                                  ("page=2;\(name)=\(canary);v=1", "page=2;\(name)=***;v=1")] {
            let url = "https://example.org/x?" + query
            #expect(throws: UpstreamError.invalidConfiguration(
                "rest upstream URL must not carry a secret in its query ('\(name)='); "
                    + "use the tokenEnv, tokenCommand or basicEnv option instead")) {
                try URLSafety.specURL(url, kind: "rest", example: "https://h/items")
            }
            #expect(URLSafety.redact(url) == "https://example.org/x?" + redacted)
        }
        // In an option's URL, the option is named (it said "rest itemURL upstream URL").
        #expect(throws: UpstreamError.invalidConfiguration(
            "rest option itemURL must not carry a secret in its query ('\(name)='); "
                + "use the tokenEnv, tokenCommand or basicEnv option instead")) {
            try RestUpstream(UpstreamConfiguration(spec: "rest:https://example.org/items",
                                                   options: ["itemURL": "https://example.org/items/{id}?\(name)=\(canary)"]))
        }
        // As a path parameter too (it was stored in the config and printed by -v).
        #expect(throws: UpstreamError.invalidConfiguration(
            "rest upstream URL must not carry a secret in its path (';\(name)='); "
                + "use the tokenEnv, tokenCommand or basicEnv option instead")) {
            try URLSafety.specURL("https://example.org/x;\(name)=\(canary)/items", kind: "rest", example: "https://h/items")
        }
    }

    /// A token in the fragment (which never reaches a server) is refused: `#access_token=...` went
    /// into the config, the reflog, each snapshot's trailer and `-v` output. Other fragments, and
    /// ordinary path parameters, are kept.
    @Test func aTokenInTheFragmentIsRefused() {
        for url in ["https://example.org/x#access_token=\(canary)", "https://example.org/x#state=1&token=\(canary)"] {
            #expect(throws: (any Error).self) { try URLSafety.specURL(url, kind: "rest", example: "https://h/items") }
        }
        #expect(throws: UpstreamError.invalidConfiguration(
            "rest upstream URL must not carry a secret in its fragment ('#access_token='): a server never sees it; "
                + "use the tokenEnv, tokenCommand or basicEnv option instead")) {
            try URLSafety.specURL("https://example.org/x#access_token=\(canary)", kind: "rest", example: "https://h/items")
        }
        for url in ["https://example.org/x;v=2/items", "https://example.org/x#top"] {
            #expect(throws: Never.self) { try URLSafety.specURL(url, kind: "rest", example: "https://h/items") }
        }
    }

    /// Ordinary names, paging cursors included, are neither refused nor redacted.
    @Test(arguments: [
        "sort", "keyword", "page", "per_page", "limit", "offset", "order", "orderby", "status", "_fields", "search",
        "modified_since", "cursor", "pageToken", "next_token", "author", "key_id", "sortkey", "monkey",
        "signature_type", "start_position", "rest_route", "passage",
    ])
    func ordinaryParametersAreKept(_ name: String) throws {
        let url = "https://example.org/x?\(name)=abc"
        #expect(try URLSafety.specURL(url, kind: "rest", example: "https://h/items").absoluteString == url)
        #expect(URLSafety.redact(url) == url)
    }

    @Test func pathSegmentsAreEncoded() throws {
        let base = try #require(URL(string: "https://h/restapi/v2.1/accounts/1"))
        let url = URLSafety.appending(["templates", "../a/b?c#d"], to: base)
        #expect(url.absoluteString == "https://h/restapi/v2.1/accounts/1/templates/%2E%2E%2Fa%2Fb%3Fc%23d")
        // Dots stay but in `.` and what holds `..` (`a.b.c` was `a%2Eb%2Ec`: a server matching
        // routes undecoded found no such item).
        #expect(URLSafety.appending(["a.b.c", "v1.2", ".", "..", "...", "x..y"], to: base).absoluteString
                    == "https://h/restapi/v2.1/accounts/1/a.b.c/v1.2/%2E/%2E%2E/%2E%2E%2E/x%2E%2Ey")
    }

    @Test func jsonPointer() throws {
        let json = try JSONValue.parse(Data(#"{"a":{"b/c":[1,{"d":"x"}]},"n":12,"f":1.5,"t":true}"#.utf8))
        #expect(json.at(pointer: "/a/b~1c/1/d") == .string("x"))
        #expect(json.at(pointer: "/n") == .integer(12))
        #expect(json.at(pointer: "/f") == .number("1.5"))
        #expect(json.at(pointer: "/t") == .bool(true))
        #expect(json.at(pointer: "/missing") == nil)
        #expect(json.at(pointer: "") == json)
    }
}

@Suite("JSONValue: kinds, exact numbers, the serialized form")
struct JSONValueTests {
    @Test func everyKindParsesToItsCase() throws {
        let text = #"{"a":true,"b":1,"c":1.5,"d":"s","e":[1,"x",null,false],"f":{"g":false},"h":9007199254740993,"i":-0,"j":""}"#
        let value = try JSONValue.parse(Data(text.utf8))
        #expect(value == .object([
            "a": .bool(true), "b": .integer(1), "c": .number("1.5"), "d": .string("s"),
            "e": .array([.integer(1), .string("x"), .null, .bool(false)]), "f": .object(["g": .bool(false)]),
            "h": .integer(9_007_199_254_740_993), "i": .number("-0"), "j": .string(""),
        ]))
    }

    /// A number a `Double` would round, refuse or lose the sign of keeps its text, and an
    /// object its member order; an integer `Int64` holds is a number.
    @Test func numbersKeepTheirTextAndMembersTheirOrder() throws {
        let numbers = ["12345678901234567890", "3.14159265358979323846", "-0", "1e400", "1.50", "1E+2", "-9223372036854775809", "0.0"]
        for number in numbers {
            #expect(try JSONValue.parse(Data(number.utf8)) == .number(number), "\(number)")
        }
        #expect(try JSONValue.parse(Data("9223372036854775807".utf8)) == .integer(.max))
        #expect(try JSONValue.parse(Data("-9223372036854775808".utf8)) == .integer(.min))
        guard case .object(let object) = try JSONValue.parse(Data(#"{"z":1,"a":2,"m":3}"#.utf8)) else {
            Issue.record("not an object"); return
        }
        #expect(object.members.map(\.key) == ["z", "a", "m"])
    }

    @Test func duplicateKeysKeepTheFirstOrAreRefused() throws {
        let text = Data(#"{"a":1,"b":2,"a":3}"#.utf8)
        #expect(try JSONValue.parse(text) == .object(["a": .integer(1), "b": .integer(2)]))
        #expect(throws: JSONParseError(offset: 16, reason: #"duplicate key "a""#)) {
            try JSONValue.parse(text, duplicateKeys: .reject)
        }
        // A hostile key is named quoted, with no raw control byte.
        let hostile = Data(#"{"\u001b[31m":1,"\u001b[31m":2}"#.utf8)
        #expect(throws: JSONParseError(offset: 28, reason: #"duplicate key "\033[31m""#)) {
            try JSONValue.parse(hostile, duplicateKeys: .reject)
        }
    }

    @Test func malformedDocumentsNameWhereTheyWentWrong() {
        for (text, offset, reason) in [
            ("{ not json", 2, "expected a string key"), ("[1 2]", 3, "expected ',' or ']'"),
            ("1 2", 2, "unexpected data after the JSON value"), (#""\ud800""#, 7, "lone surrogate in \\u escape"),
            ("01", 1, "unexpected data after the JSON value"), ("-", 1, "invalid number"),
        ] {
            #expect(throws: JSONParseError(offset: offset, reason: reason), "\(text)") { try JSONValue.parse(Data(text.utf8)) }
        }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }  // not UTF-8
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data((String(repeating: "[", count: 300)).utf8)) }
    }

    /// Nesting and the number of values are bounded, as limits (not as syntax): a hostile body of
    /// millions of tiny values would otherwise take about 70 bytes of memory a value.
    @Test func limitsAreNamedAsLimits() throws {
        let values = "[" + Array(repeating: "[]", count: 9).joined(separator: ",") + "]"  // 10 values
        #expect(try JSONValue.parse(Data(values.utf8), maxValues: 10) == JSONValue.parse(Data(values.utf8)))
        #expect(throws: JSONParseError(offset: 25, reason: "more than 9 JSON values", kind: .limit)) {
            try JSONValue.parse(Data(values.utf8), maxValues: 9)
        }
        // Members' values count, keys do not.
        #expect(throws: JSONParseError(offset: 11, reason: "more than 2 JSON values", kind: .limit)) {
            try JSONValue.parse(Data(#"{"a":1,"b":2}"#.utf8), maxValues: 2)
        }
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: JSONParseError(offset: 257, reason: "nesting deeper than 256 levels", kind: .limit)) {
            try JSONValue.parse(Data(deep.utf8))
        }
        // A limit's message says what was passed; a syntax error's says where.
        let limit = JSONParseError(offset: 25, reason: "more than 9 JSON values", kind: .limit)
        #expect(limit.summary == "over tidemark's limits: more than 9 JSON values")
        #expect(JSONParseError(offset: 2, reason: "expected a string key").summary == "not valid JSON: expected a string key at byte 2")
        // Inside the document, the value it was in is named too: a listing's item by its position,
        // a key with '/' or '~' as a JSON pointer writes it, an unusual one quoted.
        for (document, said) in [(#"[{"id": 1}, {"id": 2, "id": 3}]"#, #"duplicate key "id" at /1, byte 26"#),
                                 (#"{"data": {"a/b~": [1, 2, tru]}}"#, "invalid literal at /data/a~1b~0/2, byte 25"),
                                 ("[1,]", "unexpected character at /1, byte 3"),
                                 (#"{"x\u0001": [}"#, #"unexpected character at "/x\001/0", byte 13"#),
                                 (#"{"a": }"#, "unexpected character at /a, byte 6"),
                                 // A hostile page's megabyte keys and deep nesting are cut short.
                                 ("{\"" + String(repeating: "k", count: 100_000) + "\": {\"" + String(repeating: "k", count: 100_000) + "\": 1, \""
                                    + String(repeating: "k", count: 100_000) + "\": 2}}",
                                  "duplicate key \"" + String(repeating: "k", count: 64) + "...\" at /" + String(repeating: "k", count: 32)
                                    + "..., byte 300015"),
                                 (String(repeating: "[", count: 12) + "x", "unexpected character at /0/0/0/0/.../0/0/0/0, byte 12")] {
            let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(document.utf8), duplicateKeys: .reject) }
            #expect(error?.description == said, "\(document.prefix(80))")
        }
        // The default bound holds a page of 100,000 items of 39 fields each, and not 4,000,001 values.
        #expect(JSONValue.maxValues >= 100_000 * 40)
        let tooMany = "[" + Array(repeating: "0", count: JSONValue.maxValues).joined(separator: ",") + "]"
        #expect(throws: JSONParseError(offset: 2 * JSONValue.maxValues - 1, reason: "more than \(JSONValue.maxValues) JSON values", kind: .limit)) {
            try JSONValue.parse(Data(tooMany.utf8))
        }
    }

    /// The validator stored for an item: its ETag, else its Last-Modified date; none past 1 KB
    /// (each is stored in the manifest: 79 KB ETags made a 2,000-item manifest 158 MB).
    @Test func validatorsAreStoredUpToOneKilobyte() {
        func result(_ headers: [(String, String)]) -> HTTPResult {
            HTTPResult(url: URL(string: "http://x/items/1")!, status: 200, headers: headers, body: Data())
        }
        #expect(result([("ETag", "\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]).validator == "\"v1\"")
        #expect(result([("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]).validator == "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT")
        let longest = "\"" + String(repeating: "e", count: HTTPResult.maxValidatorBytes - 2) + "\""
        #expect(result([("ETag", longest)]).validator == longest)
        #expect(result([("ETag", "\"" + String(repeating: "e", count: HTTPResult.maxValidatorBytes - 1) + "\"")]).validator == nil)
        #expect(result([]).validator == nil)
    }

    /// Numbers are written as upstream wrote them.
    @Test func theSerializedFormKeepsNumbersAsWritten() throws {
        let text = #"{"d":12345678901234567890,"a":1.50,"c":1e400,"b":-0,"e":[0.1,7]}"#
        let serialized = try JSONValue.parse(Data(text.utf8)).serialized()
        #expect(String(decoding: serialized, as: UTF8.self) == #"{"a":1.50,"b":-0,"c":1e400,"d":12345678901234567890,"e":[0.1,7]}"#)
    }

    /// For what `JSONEncoder` held exactly (no fractions), the serialized form is its bytes, so
    /// the content tags of listed items that earlier versions stored are unchanged.
    @Test func theSerializedFormIsJSONEncodersForWhatItHeldExactly() throws {
        let text = #"""
        {"b":[1,-2,9223372036854775807,true,false,null],"a/b":"x/y \" \\ \b\f\n\r\t \u0001\u001f\u007f é😀 \u2028",
         "B":{"e\u0301":1,"f":2,"~":4,"\ud83d\ude00":5,"\ufffd":6},"":{},"Z":[],"_":""}
        """#
        let value = try JSONValue.parse(Data(text.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: value.serialized(), as: UTF8.self) == String(decoding: try encoder.encode(Encoded(value)), as: UTF8.self))
    }

    /// What earlier versions encoded: `JSONValue` through `JSONEncoder`.
    struct Encoded: Encodable {
        let value: JSONValue
        init(_ value: JSONValue) { self.value = value }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch value {
            case .null: try container.encodeNil()
            case .bool(let b): try container.encode(b)
            case .integer(let n): try container.encode(n)
            case .number(let text): try container.encode(Double(text)!)
            case .string(let s): try container.encode(s)
            case .array(let items): try container.encode(items.map(Encoded.init))
            case .object(let object):
                try container.encode(Dictionary(object.members.map { ($0.key, Encoded($0.value)) }, uniquingKeysWith: { a, _ in a }))
            }
        }
    }

    /// An error body's code and message are shown in the shapes common APIs write them.
    @Test func errorBodiesOfCommonShapesAreShown() throws {
        let credentials = try Credentials(options: [:], environment: [:])
        func shown(_ body: String) -> String {
            HTTPResult(url: URL(string: "http://x/items")!, status: 400, headers: [], body: Data(body.utf8))
                .shownErrorCode(redacting: credentials)
        }
        #expect(shown(#"{"code":"rest_invalid_param","message":"Invalid parameter(s): per_page","data":{"params":{"per_page":"too big"}}}"#)
                == " (rest_invalid_param: Invalid parameter(s): per_page; per_page: too big)")
        #expect(shown(#"{"error":"invalid_since","message":"since must be digits"}"#) == " (invalid_since: since must be digits)")
        #expect(shown(#"{"message":"since must be digits"}"#) == " (since must be digits)")
        #expect(shown(#"{"error":{"code":400,"message":"Bad since"}}"#) == " (400: Bad since)")
        #expect(shown(#"{"type":"about:blank","title":"Bad Request","detail":"since is not a number"}"#)
                == " (Bad Request: since is not a number)")
        #expect(shown(#"{"errors":[{"title":"Invalid","detail":"since"}]}"#) == " (Invalid: since)")
        #expect(shown(#"{"error":"invalid_grant","error_description":"expired"}"#) == " (invalid_grant: expired)")
        #expect(shown("[1]") == "" && shown("not json") == "" && shown("{}") == "")
    }

}
