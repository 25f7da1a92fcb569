#!/usr/bin/env python3
"""The case study's dataset: an hourly energy export for one building, with abnormal events
planted at times chosen from the seed.

    make_energy_data.py OUT.csv [--seed N] [--weeks W] [--events-json EVENTS.json]

Columns: timestamp (ISO, hourly), energy_kwh, outdoor_temp_c. The normal load has a daily and
a weekly pattern (occupied 08-18 on weekdays), heating below 15 deg C and cooling above 22 deg C,
and Gaussian noise. Four events are planted after the first week, apart from each other: a
night-time surge (equipment left running), an outage (near-zero use), a weekend surge, and a
daytime spike. --events-json writes them (start, end, kind) for tests. Standard library only,
so it runs anywhere; the same seed always gives the same bytes.
"""
import argparse
import datetime
import json
import math
import random


def temperature(rng, t, hour_index):
    day = hour_index / 24
    seasonal = 6 + 8 * math.sin(2 * math.pi * (day - 20) / 365)
    daily = 4 * math.sin(2 * math.pi * (t.hour - 9) / 24)
    return seasonal + daily + rng.gauss(0, 1.2)


def normal_load(t, temp):
    occupied = t.weekday() < 5 and 8 <= t.hour < 18
    load = 22 + (38 if occupied else 0) + (6 if t.weekday() < 5 and t.hour in (7, 18) else 0)
    return load + 1.6 * max(0.0, 15 - temp) + 2.2 * max(0.0, temp - 22)


def plan_events(rng, hours, start):
    """Four non-overlapping events after the first week, each of a fixed kind."""
    kinds = [("night_surge", 6), ("outage", 4), ("weekend_surge", 8), ("daytime_spike", 3)]
    events, taken = [], []
    for kind, length in kinds:
        for _ in range(10000):
            first = rng.randrange(24 * 7, hours - length - 1)
            t = start + datetime.timedelta(hours=first)
            if kind == "night_surge" and not (t.hour >= 22 or t.hour <= 1):
                continue
            if kind == "weekend_surge" and not (t.weekday() == 5 and 9 <= t.hour <= 12):
                continue
            if kind == "daytime_spike" and not (t.weekday() < 5 and 9 <= t.hour <= 14):
                continue
            if any(abs(first - other) < 48 for other in taken):
                continue
            taken.append(first)
            events.append({"kind": kind, "first_hour": first, "hours": length})
            break
        else:
            raise SystemExit("could not place a %s event; use more weeks" % kind)
    return events


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--weeks", type=int, default=6)
    parser.add_argument("--events-json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    start = datetime.datetime(2026, 1, 5)  # a Monday
    hours = args.weeks * 7 * 24
    events = plan_events(rng, hours, start)
    effect = {}
    for event in events:
        for h in range(event["first_hour"], event["first_hour"] + event["hours"]):
            effect[h] = event["kind"]
    with open(args.out, "w") as out:
        out.write("timestamp,energy_kwh,outdoor_temp_c\n")
        for h in range(hours):
            t = start + datetime.timedelta(hours=h)
            temp = temperature(rng, t, h)
            kwh = normal_load(t, temp) + rng.gauss(0, 2.0)
            kind = effect.get(h)
            if kind in ("night_surge", "weekend_surge"):
                kwh += 35
            elif kind == "daytime_spike":
                kwh += 45
            elif kind == "outage":
                kwh = rng.uniform(0.0, 1.5)
            out.write("%s,%.2f,%.1f\n" % (t.strftime("%Y-%m-%d %H:%M:%S"), max(kwh, 0.0), temp))
    if args.events_json:
        planted = []
        for event in events:
            first = start + datetime.timedelta(hours=event["first_hour"])
            last = first + datetime.timedelta(hours=event["hours"] - 1)
            planted.append({"kind": event["kind"], "start": first.strftime("%Y-%m-%d %H:%M:%S"),
                            "end": last.strftime("%Y-%m-%d %H:%M:%S")})
        with open(args.events_json, "w") as f:
            json.dump(planted, f, indent=2)


if __name__ == "__main__":
    main()
