"""Reports over labels: prevalence, predictors of failure, agreement, exports and their renderings.

Pure functions over a :class:`~annotator.report.frame.Frame` (numpy matrices built from the
store in bulk); every statistic comes from scipy, statsmodels or scikit-learn, except
Krippendorff's alpha (``alpha.py``), which no permissively licensed library computes.
"""
