"""The experiment configuration (the fork reads it from a YAML file into ``config``)."""

config = {
    "BATCH_IMAGES": 2,                       # images per device
    "SCALES": [(20, 32), (32, 20)],          # the largest image sizes of the dataset
    "FIXED_PARAMS": ["conv1", "gamma"],      # frozen by substring: conv1_*, bn_conv1_*, bn2_gamma
    "FIXED_PARAMS_SHARED": ["conv1", "conv2", "gamma", "beta"],
    "kvstore": "device",
    "lr": 0.05,
    "momentum": 0.9,
    "wd": 0.0005,
    "images": 24,
    "seed": 3,
}
