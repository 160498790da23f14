/// The provider emulator: APNs, FCM HTTP v1 and ADM as the real services answer, over HTTP/2.
public enum ClarionEmulator {}
