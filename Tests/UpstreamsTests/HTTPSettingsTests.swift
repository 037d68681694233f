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
        for (key, value) in [("maxAttempts", "0"), ("maxAttempts", "21"), ("timeout", "soon"), ("timeout", "-1")] {
            #expect {
                _ = try HTTPSettings().applying([key: value])
            } throws: { error in
                (error as? UpstreamError)?.description == "option \(key) must be a whole number from 1 to \(key == "timeout" ? 3600 : 20), got '\(value)'"
            }
        }
    }

    @Test func factoryRejectsBadHTTPOptions() {
        #expect(throws: UpstreamError.self) {
            _ = try UpstreamFactory.make(UpstreamConfiguration(spec: "rest:https://example.org/items", options: ["maxAttempts": "x"]))
        }
    }
}
