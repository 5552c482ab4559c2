"""Model figures without a release: refresh-model-figures (refresh.py) and onboard-model (onboard.py), with the
calibration suite onboarding asks (suite.py, datasets/calibration/)."""
