# The seed case study's analysis, run inside the sandbox by tools/demo.sh: read a CSV of daily
# sensor values, flag anomalies with a rolling z-score, save a chart and a short report.
import numpy as np
import pandas as pd
from scipy import stats
import matplotlib.pyplot as plt

df = pd.read_csv("input/sensor.csv", parse_dates=["day"])
df["rolling_mean"] = df["value"].rolling(14, min_periods=3).mean()
df["rolling_std"] = df["value"].rolling(14, min_periods=3).std()
df["z"] = (df["value"] - df["rolling_mean"]) / df["rolling_std"]
anomalies = df[np.abs(df["z"]) > 3]
slope = stats.linregress(np.arange(len(df)), df["value"]).slope

fig, ax = plt.subplots(figsize=(9, 4))
ax.plot(df["day"], df["value"], label="value", linewidth=1)
ax.plot(df["day"], df["rolling_mean"], label="14-day mean")
ax.scatter(anomalies["day"], anomalies["value"], color="red", zorder=3, label="anomaly")
ax.legend()
ax.set_title("Sensor values and anomalies")
fig.tight_layout()
fig.savefig("output/chart.png", dpi=100)

with open("output/report.md", "w") as report:
    report.write(f"# Anomaly report\n\n{len(df)} days, trend {slope:+.3f} per day, "
                 f"{len(anomalies)} anomalies (|z| > 3 against a 14-day rolling window):\n\n")
    for _, row in anomalies.iterrows():
        report.write(f"- {row['day'].date()}: {row['value']:.1f} (z = {row['z']:+.1f})\n")
print(open("output/report.md").read())
