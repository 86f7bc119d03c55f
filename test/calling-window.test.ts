// Calling windows as pure functions (src/cti/calling-window.ts): the lead's zone from its state,
// else its area code; its local time with the zone's offset; outside 8:00–21:00 there (or its
// state's stricter hours), across zones and daylight-saving changes. No database, no sleeping.
import { describe, expect, test } from "bun:test";
import { AREA_ZONES } from "../src/cti/area-zones";
import { areaZone, FEDERAL_WINDOW, leadZone, localCallTime, STATE_WINDOWS, windowFor } from "../src/cti/calling-window";
import { STATE_ZONES } from "../src/messages/quiet-hours";
import { isZone } from "../src/zone";

const at = (iso: string) => Date.parse(iso);
const texas = (phone = "5125550100") => ({ state: "TX", phone });

describe("the lead's zone", () => {
  test("its state's, else its phone's area code's (10 digits, or 11 with the leading 1), else unknown", () => {
    expect(leadZone("TX", "2125550100")).toBe("America/Chicago");
    expect(leadZone("", "2135550100")).toBe("America/Los_Angeles");
    expect(leadZone("new york", "")).toBe("America/New_York");
    expect(areaZone("+1 (212) 555-0100")).toBe("America/New_York");
    expect(areaZone("12125550100")).toBe("America/New_York");
    expect(areaZone("8085550100")).toBe("Pacific/Honolulu");
    expect(areaZone("9075550100")).toBe("America/Anchorage");
    expect(areaZone("4165550100")).toBe("America/Toronto");
    // Not geographic, not North American, too short: no zone.
    expect(areaZone("8005550100")).toBeNull();
    expect(areaZone("442071234567")).toBeNull();
    expect(areaZone("22125550100")).toBeNull();
    expect(areaZone("555010")).toBeNull();
    expect(leadZone("ZZ", "8005550100")).toBeNull();
  });

  test("the area code table is data every zone of which the runtime knows, and agrees with the state table where both speak", () => {
    expect(AREA_ZONES.size).toBeGreaterThan(400);
    for (const [code, zone] of AREA_ZONES) {
      expect({ code, zone, ok: /^[2-9][0-9]{2}$/.test(code) && isZone(zone) }).toEqual({ code, zone, ok: true });
    }
    // Spot checks of the split codes resolved by hand (src/cti/area-zones.ts).
    for (const [code, state] of [["208", "ID"], ["605", "SD"], ["701", "ND"], ["775", "NV"], ["907", "AK"], ["512", "TX"], ["305", "FL"]] as const) {
      expect([code, AREA_ZONES.get(code)]).toEqual([code, STATE_ZONES[state]]);
    }
  });
});

describe("local time and the window", () => {
  test("the edges of 8:00–21:00 in the lead's zone, to the second; local time with its offset", () => {
    // 2026-01-15 in Texas: CST, UTC-6.
    expect(localCallTime(at("2026-01-15T13:59:59Z"), texas())).toEqual({
      zone: "America/Chicago",
      localTime: "2026-01-15T07:59:59-06:00",
      outsideWindow: true,
      window: FEDERAL_WINDOW,
    });
    expect(localCallTime(at("2026-01-15T14:00:00Z"), texas())).toMatchObject({ localTime: "2026-01-15T08:00:00-06:00", outsideWindow: false });
    expect(localCallTime(at("2026-01-16T02:59:59.999Z"), texas())).toMatchObject({ localTime: "2026-01-15T20:59:59-06:00", outsideWindow: false });
    // From 21:00 on is outside (the safe reading of "after 9 p.m.").
    expect(localCallTime(at("2026-01-16T03:00:00Z"), texas())).toMatchObject({ localTime: "2026-01-15T21:00:00-06:00", outsideWindow: true });
    expect(localCallTime(at("2026-01-16T06:00:00Z"), texas())).toMatchObject({ localTime: "2026-01-16T00:00:00-06:00", outsideWindow: true });
  });

  test("one instant, four zones: inside in New York, outside in Chicago, Los Angeles and Honolulu", () => {
    const t = at("2026-01-15T13:30:00Z");
    const seen = (state: string) => {
      const r = localCallTime(t, { state, phone: "" });
      return [r.localTime, r.outsideWindow];
    };
    expect(seen("NY")).toEqual(["2026-01-15T08:30:00-05:00", false]);
    expect(seen("IL")).toEqual(["2026-01-15T07:30:00-06:00", true]);
    expect(seen("CA")).toEqual(["2026-01-15T05:30:00-08:00", true]);
    expect(seen("HI")).toEqual(["2026-01-15T03:30:00-10:00", true]);
  });

  test("across daylight saving: the same UTC hour is outside the day before the spring change and inside on it, and the reverse in the fall", () => {
    const ny = { state: "NY", phone: "" };
    // 12:00Z is 07:00 EST on Saturday 2026-03-07 and 08:00 EDT on Sunday 2026-03-08.
    expect(localCallTime(at("2026-03-07T12:00:00Z"), ny)).toMatchObject({ localTime: "2026-03-07T07:00:00-05:00", outsideWindow: true });
    expect(localCallTime(at("2026-03-08T12:00:00Z"), ny)).toMatchObject({ localTime: "2026-03-08T08:00:00-04:00", outsideWindow: false });
    expect(localCallTime(at("2026-03-08T11:59:59Z"), ny)).toMatchObject({ localTime: "2026-03-08T07:59:59-04:00", outsideWindow: true });
    // The jump itself (02:00 EST → 03:00 EDT) is outside either way, with the new offset after it.
    expect(localCallTime(at("2026-03-08T06:59:59Z"), ny)).toMatchObject({ localTime: "2026-03-08T01:59:59-05:00", outsideWindow: true });
    expect(localCallTime(at("2026-03-08T07:00:00Z"), ny)).toMatchObject({ localTime: "2026-03-08T03:00:00-04:00", outsideWindow: true });
    // Fall: 12:00Z is 08:00 EDT on Saturday 2026-10-31 and 07:00 EST on Sunday 2026-11-01.
    expect(localCallTime(at("2026-10-31T12:00:00Z"), ny)).toMatchObject({ localTime: "2026-10-31T08:00:00-04:00", outsideWindow: false });
    expect(localCallTime(at("2026-11-01T12:00:00Z"), ny)).toMatchObject({ localTime: "2026-11-01T07:00:00-05:00", outsideWindow: true });
    expect(localCallTime(at("2026-11-01T13:00:00Z"), ny)).toMatchObject({ localTime: "2026-11-01T08:00:00-05:00", outsideWindow: false });
    // Arizona keeps standard time: 15:00Z is 08:00 there before and after the change.
    for (const day of ["2026-03-07", "2026-03-08", "2026-07-01"]) {
      expect(localCallTime(at(`${day}T15:00:00Z`), { state: "AZ", phone: "" })).toMatchObject({ localTime: `${day}T08:00:00-07:00`, outsideWindow: false });
      expect(localCallTime(at(`${day}T14:59:59Z`), { state: "AZ", phone: "" })).toMatchObject({ outsideWindow: true });
    }
  });

  test("a state with stricter hours (data: STATE_WINDOWS) ends at 20:00; others keep the federal 21:00", () => {
    expect(windowFor("FL")).toBe(STATE_WINDOWS.FL);
    expect(windowFor("Florida")).toBe(STATE_WINDOWS.FL);
    expect(windowFor("ok")).toBe(STATE_WINDOWS.OK);
    expect(windowFor("GA")).toBe(FEDERAL_WINDOW);
    expect(windowFor("")).toBe(FEDERAL_WINDOW);
    // 20:30 EST on 2026-01-15.
    const t = at("2026-01-16T01:30:00Z");
    expect(localCallTime(t, { state: "FL", phone: "3055550100" })).toMatchObject({ localTime: "2026-01-15T20:30:00-05:00", outsideWindow: true, window: { start: "08:00", end: "20:00" } });
    expect(localCallTime(t, { state: "GA", phone: "4045550100" })).toMatchObject({ localTime: "2026-01-15T20:30:00-05:00", outsideWindow: false });
    for (const rule of Object.values(STATE_WINDOWS)) {
      expect(rule.start >= FEDERAL_WINDOW.start && rule.end <= FEDERAL_WINDOW.end && rule.source.length > 0).toBe(true);
    }
  });

  test("an unknown zone: no local time, and nothing says it is outside", () => {
    expect(localCallTime(at("2026-01-15T08:00:00Z"), { state: "", phone: "8005550100" })).toEqual({ zone: null, localTime: null, outsideWindow: false, window: FEDERAL_WINDOW });
  });

  test("the area code decides when the state is empty or unknown", () => {
    // 13:30Z: 05:30 in Los Angeles (213), 08:30 in New York (212).
    expect(localCallTime(at("2026-01-15T13:30:00Z"), { state: "", phone: "12135550100" })).toMatchObject({ zone: "America/Los_Angeles", outsideWindow: true });
    expect(localCallTime(at("2026-01-15T13:30:00Z"), { state: "XX", phone: "2125550100" })).toMatchObject({ zone: "America/New_York", outsideWindow: false });
  });
});
