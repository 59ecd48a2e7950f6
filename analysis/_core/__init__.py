"""The implementation behind `spline_analysis`'s public names: private, free to change.

Stages: sidecar + decode -> flows -> wireshark | truth -> (timeseries); pipeline runs them
once into an `Analysis`; cli is `spline-analyze`. Import what users need from the package
top (`spline_analysis.analyze`, ...), from `spline_analysis.report` and `.schema`, or
`spline_analysis.plot`.
"""
