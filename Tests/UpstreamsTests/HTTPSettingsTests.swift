import Foundation
import Testing
@testable import Upstreams

@Suite struct HTTPSettingsTests {
    @Test func optionsSetAttemptsAndTimeout() throws {
        let defaults = try HTTPSettings().applying([:])
        #expect(defaults.maxAttempts == 5 && defaults.requestTimeout == 120)
        let tuned = try HTTPSettings().applying(["maxAttempts": "2", "timeout": "15"])
        #expect(tuned.maxAttempts == 2)
        #expect(tuned.requestTimeout == 15 && tuned.readTimeout == 15)
        #expect(try defaults.maxListedItems == 1_000_000 && HTTPSettings().applying(["maxItems": "7"]).maxListedItems == 7)
        for (key, value, max) in [("maxAttempts", "0", 20), ("maxAttempts", "21", 20), ("timeout", "soon", 3600), ("timeout", "-1", 3600),
                                  ("maxItems", "0", 100_000_000), ("maxItems", "100000001", 100_000_000)] {
            #expect {
                _ = try HTTPSettings().applying([key: value])
            } throws: { error in
                (error as? UpstreamError)?.description == "option \(key) must be a whole number from 1 to \(max), got '\(value)'"
            }
        }
    }

    @Test func factoryRejectsBadHTTPOptions() {
        #expect(throws: UpstreamError.self) {
            _ = try UpstreamFactory.make(UpstreamConfiguration(spec: "rest:https://example.org/items", options: ["maxAttempts": "x"]))
        }
    }
}
