import Foundation
import Testing
@testable import Upstreams

@Suite struct HTTPParsingTests {
    @Test func retryAfterSeconds() {
        #expect(HTTPSession.retryAfterSeconds("3", serverDate: nil) == 3)
        #expect(HTTPSession.retryAfterSeconds(" 0 ", serverDate: nil) == 0)
        #expect(HTTPSession.retryAfterSeconds("soon", serverDate: nil) == nil)
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
        let url = "https://example.org/x?page=2&\(name)=\(canary)"
        #expect(throws: UpstreamError.invalidConfiguration(
            "rest upstream URL must not carry a secret in its query ('\(name)='); "
                + "use the tokenEnv, tokenCommand or basicEnv option instead")) {
            try URLSafety.specURL(url, kind: "rest", example: "https://h/items")
        }
        #expect(URLSafety.redact(url) == "https://example.org/x?page=2&\(name)=***")
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
    }

    @Test func jsonPointer() throws {
        let json = try JSONValue.parse(Data(#"{"a":{"b/c":[1,{"d":"x"}]},"n":12,"f":1.5,"t":true}"#.utf8))
        #expect(json.at(pointer: "/a/b~1c/1/d") == .string("x"))
        #expect(json.at(pointer: "/n") == .integer(12))
        #expect(json.at(pointer: "/f") == .number(1.5))
        #expect(json.at(pointer: "/t") == .bool(true))
        #expect(json.at(pointer: "/missing") == nil)
        #expect(json.at(pointer: "") == json)
    }
}

@Suite("JSONValue: kinds and exact integers")
struct JSONValueTests {
    @Test func everyKindParsesToItsCase() throws {
        let text = #"{"a":true,"b":1,"c":1.5,"d":"s","e":[1,"x",null,false],"f":{"g":false},"h":9007199254740993,"i":-0,"j":""}"#
        let value = try JSONValue.parse(Data(text.utf8))
        #expect(value == .object([
            "a": .bool(true), "b": .integer(1), "c": .number(1.5), "d": .string("s"),
            "e": .array([.integer(1), .string("x"), .null, .bool(false)]), "f": .object(["g": .bool(false)]),
            "h": .integer(9_007_199_254_740_993), "i": .integer(0), "j": .string(""),
        ]))
    }
}
